"""Home's rows: two plans with one `name` (a copied file) read as two different rows, and
the `o` dialog lists every run column key, scrolling, with its field still in view."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Input
from ui_fixtures import screen_text, wait_for, write_plan, write_recorded_run

from growcockpit.protocol.run_notes import RunNotes, write_notes
from growcockpit.session.catalog import PlanEntry
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import HomeScreen
from growcockpit.ui.screens.home import plan_labels
from growcockpit.ui.screens.prompt import PromptScreen


def _entry(path: str, name: str) -> PlanEntry:
    return PlanEntry(Path(path), name, "yours", 1, 10, 2)


def test_plan_labels_tell_plans_of_one_name_apart() -> None:
    plans = [_entry("a.toml", "same"), _entry("b.toml", "same"), _entry("c.toml", "other")]
    plans.append(_entry("plans/a.toml", "same"))
    labels = plan_labels(plans)
    assert labels[2] == "other"  # a name of its own stays as it was
    assert len(set(labels)) == 4
    assert labels[1] == "same · b.toml"
    assert labels[0] == "same · a.toml" and labels[3] == "same · plans/a.toml"


async def test_two_plans_of_one_name_are_two_rows_on_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_plan(tmp_path / "mine.toml")
    write_plan(tmp_path / "mine-copy.toml")
    app = GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path, samples=tmp_path / "s")
    (tmp_path / "s").mkdir()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen))
        table = app.screen.query_one("#plans-table", DataTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        await pilot.pause(0.2)
        cells = {str(table.get_row_at(i)[0]) for i in range(2)}
        assert cells == {"mslt-snapshot · mine.toml", "mslt-snapshot · mine-copy.toml"}
        text = screen_text(app)
        assert "mine.toml" in text and "mine-copy.toml" in text


async def test_the_columns_dialog_lists_every_key_and_keeps_its_field(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for k in range(6):  # 90 #tag keys besides the plan's (16 tags at most a run)
        run = write_recorded_run(runs / f"r{k}")
        write_notes(run, RunNotes("", tuple(f"tag{i:03d}" for i in range(15 * k, 15 * k + 15))))
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path, samples=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen))
        home = app.screen
        assert isinstance(home, HomeScreen)
        await wait_for(pilot, lambda: len(home.rows) == 6)
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        prompt = app.screen
        await pilot.pause(0.3)
        body = str(prompt.query_one("#prompt-body").render())
        assert "#tag000" in body and "#tag089" in body  # complete, none cut
        field = prompt.query_one(Input)
        assert 0 < field.region.bottom <= 24 and field.region.height > 0  # in view
        scroll = prompt.query_one("#prompt-body-scroll")
        assert scroll.max_scroll_y > 0
        scroll.scroll_end(animate=False)
        await pilot.pause(0.2)
        assert "#tag089" in screen_text(app)
