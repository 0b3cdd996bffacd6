"""Three selected runs, all three on the compare screen.

A new user selected three runs; one was missing from both plots and the verdict table,
while `growcockpit compare` listed all three. Two causes, both reproduced with three
short CPU runs: a run hashed to the colour "white" was drawn (and named in the table)
invisibly on the light theme, and plotext's legend box, top left where loss curves
start, hid the short runs' curves whole at 80×24. A run asked for from outside the runs
folder, and an older read finishing after a newer one, dropped a run too.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from textual.widgets import DataTable, SelectionList
from ui_fixtures import PLAN, loss_at, screen_text, wait_for, write_events

from growcockpit.protocol import Eval, Event, RunFinished, RunStarted, StageStarted, Step
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import CompareScreen
from growcockpit.ui.screens.compare import CURVE_COLOURS
from growcockpit.ui.screens.race import COLOURS as RACE_COLOURS
from growcockpit.ui.screens.race import CUT_COLOUR
from growcockpit.ui.themes import parse_palette, theme_files


def _luminance(hex_colour: str) -> float:
    def channel(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_every_run_colour_reads_on_every_theme() -> None:
    """At least 3:1 (WCAG's least for graphics) against each theme's grounds."""
    grounds = {}
    for theme in theme_files():
        palette = parse_palette(theme.path.read_text())
        for key in ("background", "surface", "panel"):
            if re.fullmatch(r"#[0-9a-fA-F]{6}", palette.get(key, "")):
                grounds[f"{theme.name} {key}"] = palette[key]
    assert len(grounds) >= 6
    assert RACE_COLOURS == CURVE_COLOURS  # the race screen draws candidates in them too
    for colour in (*CURVE_COLOURS, CUT_COLOUR):
        for where, ground in grounds.items():
            assert _contrast(colour, ground) >= 3.0, (colour, where)


def _events(name: str, steps: int, offset: float) -> list[Event]:
    """A finished run of `steps` 500 ms steps, evaluated every 5, its loss `offset` above
    the others': short runs sit at the left of a shared training-time axis, where their
    loss starts high."""
    evs: list[Event] = [RunStarted(run_id=name, plan=PLAN, device="cpu", pid=0)]
    evs.append(StageStarted(index=0, name="s", layers=2, trainable_layers=[0, 1], steps=steps))
    for step in range(1, steps + 1):
        loss = loss_at(step) + offset
        evs.append(Step(t=step, step=step, stage=0, loss=loss, tokens=2048 * step, step_ms=500))
        if step % 5 == 0:
            evs.append(Eval(step=step, stage=0, val_loss=loss + 0.1))
    evs.append(RunFinished(status="completed", step=steps))
    return evs


def _write_run(run_dir: Path, steps: int, offset: float = 0.0) -> Path:
    run_dir.mkdir(parents=True)
    write_events(run_dir / "events.jsonl", _events(run_dir.name, steps, offset))
    return run_dir


def _colour_cells(app: GrowCockpitApp, widget_id: str) -> tuple[Counter[str], str]:
    """Non-blank cells by foreground colour inside a widget, and its text."""
    region = app.screen.query_one(widget_id).content_region
    strips = app.screen._compositor.render_strips()
    cells: Counter[str] = Counter()
    lines = []
    for y in range(region.y, region.bottom):
        x, line = 0, []
        for seg in strips[y]:
            for ch in seg.text:
                if region.x <= x < region.right:
                    line.append(ch)
                    if ch.strip() and seg.style is not None and seg.style.color is not None:
                        cells[str(seg.style.color.name).lower()] += 1
                x += 1
        lines.append("".join(line))
    return cells, "\n".join(lines)


async def _open(app: GrowCockpitApp, pilot: object, runs: Path, paths: list[Path]) -> CompareScreen:
    app.push_screen(CompareScreen(runs, paths))
    await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
    screen = app.screen
    assert isinstance(screen, CompareScreen)
    await wait_for(pilot, lambda: len(screen.comparison.runs) == len(paths))
    table = screen.query_one("#compare-table", DataTable)
    await wait_for(pilot, lambda: table.row_count == len(paths))
    await pilot.pause(0.2)  # type: ignore[attr-defined]
    return screen


@pytest.mark.parametrize("theme", ["dark", "light"])
@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
async def test_three_selected_runs_are_all_drawn_and_listed(
    tmp_path: Path, theme: str, size: tuple[int, int]
) -> None:
    runs = tmp_path / "runs"
    paths = [
        _write_run(runs / "baseline-long", 80),
        _write_run(runs / "short-a", 20, 1.5),
        _write_run(runs / "short-b", 25, -1.0),
    ]
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path, theme=theme)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = await _open(app, pilot, runs, paths)
        for plot in ("#compare-train", "#compare-val"):
            cells, text = _colour_cells(app, plot)
            for path in paths:
                assert path.name not in text, f"{plot}: a legend box covers the curves"
                assert cells[screen.colour_of(path.name).lower()] >= 3, (plot, path.name)
        table = screen.query_one("#compare-table", DataTable)
        listed = [table.get_row_at(i)[0] for i in range(table.row_count)]
        marker = "▸ "  # the run highlighted in the list (its verdict is shown whole)
        assert sorted(str(n).removeprefix(marker) for n in listed) == sorted(p.name for p in paths)
        for name in listed:  # each name in a colour that reads on this theme's ground
            assert name.style.replace(" bold", "") in CURVE_COLOURS  # type: ignore[union-attr]


async def test_a_run_from_outside_the_runs_folder_is_listed_and_compared(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    paths = [
        _write_run(runs / "baseline-long", 80),
        _write_run(runs / "short-a", 20),
        _write_run(tmp_path / "races" / "r" / "runs" / "short-b", 25),
    ]
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = await _open(app, pilot, runs, paths)
        assert sorted(r.name for r in screen.comparison.runs) == sorted(p.name for p in paths)
        assert "short-b" in screen_text(app)


async def test_an_older_read_finishing_late_does_not_replace_the_newer(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    paths = [_write_run(runs / n, k) for n, k in (("base", 80), ("a", 20), ("b", 25))]
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = await _open(app, pilot, runs, paths)
        older = screen.selected_paths()[:2]
        stale = [r for r in screen.comparison.runs if Path(runs / r.name) in older]
        screen.post_message(CompareScreen.RunsLoaded(older, stale))
        await pilot.pause(0.3)
        assert len(screen.comparison.runs) == 3
        assert len(screen.query_one(SelectionList).selected) == 3
