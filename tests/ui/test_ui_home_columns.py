"""Home's run table as a W&B user expects it: extra columns from plan keys and tags
(`o`), sorted by a header click or `s` / `S` (both directions, missing values last),
filtered by tag or words (`/`, Esc clears); the columns and the sort outlive the app."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from textual.pilot import Pilot
from ui_fixtures import T0, screen_text, set_mtime, wait_for, write_recorded_run

from growcockpit.protocol import RunPaths, RunStatus, write_status
from growcockpit.protocol.run_notes import RunNotes, write_notes
from growcockpit.session.home_runs import HomeRuns
from growcockpit.session.run_columns import RunRow, SortSpec
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import HomeScreen, home
from growcockpit.ui.widgets.runs_table import RunsTable

SIZE = (160, 48)
PLAN = """\
name = "{name}"
[model]
family = "{family}"
hidden_size = {hidden}
[optim]
lr = {lr}
[[stages]]
steps = 40
[[stages]]
steps = 40
"""


def make_runs(root: Path) -> Path:
    """Three finished runs: two with plans and tags, one with neither."""
    for i, (name, family, hidden, lr, tags) in enumerate(
        (
            ("a-bert", "bert", 128, "1e-3", ("baseline",)),
            ("b-llama", "llama", 256, "5e-4", ("mslt",)),
            ("c-bare", None, 0, "", ()),
        )
    ):
        run = write_recorded_run(root / name)
        if family is not None:
            text = PLAN.format(name=name, family=family, hidden=hidden, lr=lr)
            (run / "plan.toml").write_text(text)
        if tags:
            write_notes(run, RunNotes("", tags))
        set_mtime(run, T0 + 10 * i)
    return root


def shown(app: GrowCockpitApp) -> list[str]:
    screen = app.screen
    assert isinstance(screen, HomeScreen)
    return [r.name for r in screen.runs]


async def click_header(pilot: Pilot[None], column: str) -> None:
    table = pilot.app.screen.query_one(RunsTable)
    x = 0
    for key, col in table.columns.items():
        if key.value == column:
            break
        x += col.get_render_width(table)
    await pilot.click(RunsTable, offset=(x + 1, 1))  # row 0 is the border
    await pilot.pause()


@pytest.fixture
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg"


async def test_choose_columns_sort_filter_and_remember(tmp_path: Path, xdg: Path) -> None:
    runs = make_runs(tmp_path / "runs")
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path, clock=lambda: T0 + 100)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.query_one(RunsTable)
        assert shown(app) == ["c-bare", "b-llama", "a-bert"]  # newest first
        await pilot.press("o")
        await pilot.pause()
        await pilot.press(*"model.family, optim.lr stages #baseline", "enter")
        await pilot.pause()
        assert table.column_order()[7:11] == ("model.family", "optim.lr", "stages", "#baseline")
        text = screen_text(app)
        assert "llama" in text and "0.0005" in text and "✓" in text
        await click_header(pilot, "optim.lr")
        assert shown(app) == ["b-llama", "a-bert", "c-bare"]  # 5e-4, 1e-3, none last
        assert "optim.lr ↑" in screen_text(app)
        await click_header(pilot, "optim.lr")
        assert shown(app) == ["a-bert", "b-llama", "c-bare"]  # descending: none still last
        assert "sorted by optim.lr ↓" in screen_text(app)
        await pilot.press("S")  # reverse: ascending again
        await pilot.pause()
        assert shown(app) == ["b-llama", "a-bert", "c-bare"]
        await pilot.press("/")
        await pilot.pause()
        await pilot.press(*"#baseline", "enter")
        await pilot.pause()
        assert shown(app) == ["a-bert"]
        assert "filter #baseline: 1 of 3" in screen_text(app)
        await pilot.press("/")
        await pilot.pause()
        await pilot.press(*["backspace"] * 9, *"LLAMA", "enter")  # free text, any case
        await pilot.pause()
        assert shown(app) == ["b-llama"]
        await pilot.press("escape")
        await pilot.pause()
        assert shown(app) == ["b-llama", "a-bert", "c-bare"]
        await pilot.press("/")
        await pilot.pause()
        await pilot.press(*"#nobody", "enter")
        await pilot.pause()
        assert shown(app) == [] and "no run matches #nobody" in screen_text(app)
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path, clock=lambda: T0 + 100)
    async with app.run_test(size=SIZE) as pilot:  # a new cockpit: same columns and sort
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HomeScreen)
        assert screen.table_model.columns == ("model.family", "optim.lr", "stages", "#baseline")
        assert screen.table_model.sort == SortSpec("optim.lr")
        assert shown(app) == ["b-llama", "a-bert", "c-bare"]  # the filter is not remembered


async def test_s_walks_the_columns_and_a_bad_column_list_is_refused(
    tmp_path: Path, xdg: Path
) -> None:
    runs = make_runs(tmp_path / "runs")
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path, clock=lambda: T0 + 100)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HomeScreen)
        await pilot.press("s")
        await pilot.pause()
        assert screen.table_model.sort == SortSpec("run") and shown(app)[0] == "a-bert"
        await pilot.press("S")
        await pilot.pause()
        assert shown(app)[0] == "c-bare"
        await pilot.press("o")
        await pilot.pause()
        await pilot.press(*"loss", "enter")  # built in: refused, the prompt stays
        await pilot.pause()
        assert "always shown" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert screen.table_model.columns == ()


async def test_a_changed_cell_is_patched_in_place_not_the_table_rebuilt(
    tmp_path: Path, xdg: Path
) -> None:
    """A live run's step moving on changes one cell: the rows stay (a rebuild of hundreds
    makes the table measure every cell again on the event loop)."""
    runs = make_runs(tmp_path / "runs")
    live = runs / "b-llama"

    def status(step: int) -> None:
        write_status(
            RunPaths(live).status,
            RunStatus(
                run_id="b",
                plan_name="b",
                state="running",
                stage=0,
                stage_name="s",
                num_stages=2,
                step=step,
                total_steps=80,
                loss=4.0,
                pid=os.getpid(),
            ),
        )

    status(10)
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path, clock=lambda: T0 + 100)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.query_one(RunsTable)
        rows = list(table.rows)
        assert "10/80" in screen_text(app)
        status(11)
        app.screen.action_refresh()  # type: ignore[attr-defined]
        await wait_for(pilot, lambda: "11/80" in screen_text(app))
        assert list(table.rows) == rows and all(
            a is b for a, b in zip(table.rows, rows, strict=True)
        )
        assert shown(app)[0] == "b-llama"


async def test_many_runs_are_read_in_a_worker_with_the_screen_already_up(
    tmp_path: Path, xdg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past FIRST_READ_HERE runs the first read is a worker's too: the table shows Textual's
    loading indicator until the rows come."""
    runs = make_runs(tmp_path / "runs")
    monkeypatch.setattr(home, "FIRST_READ_HERE", 2)  # 3 runs: "many"
    threads: list[int] = []
    read = HomeRuns.read

    def watched(self: HomeRuns) -> list[RunRow]:
        threads.append(threading.get_ident())
        return read(self)

    monkeypatch.setattr(HomeRuns, "read", watched)
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path, clock=lambda: T0 + 100)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(shown(app)) == 3)
        assert threads and threading.main_thread().ident not in threads
        assert not app.screen.query_one(RunsTable).loading
    assert HomeRuns(runs).count_at_most(3) and not HomeRuns(runs).count_at_most(2)
