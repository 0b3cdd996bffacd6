"""The compare screen with four runs, at 80×24 and 160×48: every verdict row in view and
none cut at the border, the highlighted run's verdict whole, a picked run marked in text
(not only in colour), and a word when the target run changes.

Four tiny recorded runs: a baseline, two shorter runs of the same plan, and one with
another sequence length (not comparable, the longest verdict). Regenerate the SVGs after
a deliberate change with `pytest tests/ui/test_compare_screen_layout.py --snapshot-update`
and review them.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable
from ui_fixtures import PLAN, T0, loss_at, notes, set_mtime, wait_for, write_events

from growcockpit.protocol import Eval, Event, RunFinished, RunStarted, StageStarted, Step
from growcockpit.session.compare_view import short_verdict
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import CompareScreen
from growcockpit.ui.screens.compare_table import CELL_PAD, fit_columns
from growcockpit.ui.widgets.run_picker import NOT_PICKED, PICKED

SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
DATA = {"tokenizer": "train:1000", "seq_len": 32}
OTHER = "longer-sequences-20260101-000000"  # listed first (newest), highlighted first


def _plan(seq_len: int) -> dict[str, Any]:
    plan = copy.deepcopy(PLAN)
    plan["data"] = {**DATA, "seq_len": seq_len}
    return plan


def _events(name: str, steps: int, offset: float, seq_len: int) -> list[Event]:
    evs: list[Event] = [RunStarted(run_id=name, plan=_plan(seq_len), device="cpu", pid=0)]
    evs.append(StageStarted(index=0, name="s", layers=2, trainable_layers=[0, 1], steps=steps))
    for step in range(1, steps + 1):
        loss = loss_at(step) + offset
        evs.append(Step(t=step, step=step, stage=0, loss=loss, tokens=2048 * step, step_ms=500))
        if step % 5 == 0:
            evs.append(Eval(step=step, stage=0, val_loss=loss + 0.1))
    evs.append(RunFinished(status="completed", step=steps))
    return evs


def four_runs(runs: Path) -> list[Path]:
    """baseline-long (the target), short-a, short-b and OTHER (not comparable), oldest first."""
    specs = [("baseline-long", 80, 0.0, 32), ("short-a", 20, 1.5, 32)]
    specs += [("short-b", 25, -1.0, 32), (OTHER, 40, 0.2, 64)]
    paths = []
    for k, (name, steps, offset, seq_len) in enumerate(specs):
        path = runs / name
        path.mkdir(parents=True)
        write_events(path / "events.jsonl", _events(name, steps, offset, seq_len))
        set_mtime(path, T0 + k)
        paths.append(path)
    return paths


def _text(app: GrowCockpitApp, widget_id: str) -> list[str]:
    """The lines a person sees inside a widget."""
    region = app.screen.query_one(widget_id).content_region
    strips = app.screen._compositor.render_strips()
    lines = []
    for y in range(region.y, region.bottom):
        line = "".join(seg.text for seg in strips[y])
        lines.append(line[region.x : region.right])
    return lines


def _flat(lines: list[str]) -> str:
    return re.sub(r"\s+", " ", " ".join(lines)).strip()


async def _open(pilot: Pilot[None], paths: list[Path]) -> CompareScreen:
    app = pilot.app
    assert isinstance(app, GrowCockpitApp)
    app.push_screen(CompareScreen(app.runs_root, paths))
    await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.is_mounted)
    screen = app.screen
    assert isinstance(screen, CompareScreen)
    await wait_for(pilot, lambda: len(screen.comparison.runs) == len(paths))
    table = screen.query_one("#compare-table", DataTable)
    await wait_for(pilot, lambda: table.row_count == len(screen.selected_paths()) == len(paths))
    await app.workers.wait_for_complete()
    await pilot.pause(0.3)
    return screen


async def _four_open(pilot: Pilot[None]) -> None:
    app = pilot.app
    assert isinstance(app, GrowCockpitApp)
    await pilot.pause()
    await _open(pilot, sorted(app.runs_root.iterdir()))


@SIZES
def test_compare_four_runs(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    four_runs(tmp_path / "runs")
    app = GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path, theme="dark")
    assert snap_compare(app, terminal_size=size, run_before=_four_open)


@SIZES
async def test_every_verdict_is_in_view_and_the_highlighted_one_whole(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    paths = four_runs(tmp_path / "runs")
    app = GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = await _open(pilot, paths)
        table = screen.query_one("#compare-table", DataTable)
        assert table.virtual_size.width <= table.size.width, "a column runs past the border"
        rows = _text(app, "#compare-table")
        for run, verdict in zip(screen.comparison.runs, screen.comparison.verdicts, strict=True):
            head = short_verdict(verdict)[:12]
            assert any(head in row for row in rows), (run.name, head, rows)
        other = next(v for v in screen.comparison.verdicts if v.run == OTHER)
        assert short_verdict(other).startswith("not comparable")
        detail = _flat(_text(app, "#compare-detail"))
        assert short_verdict(other) in detail, detail  # whole, wrapped: nothing cut
        await pilot.press("down")  # the highlight moves: the pane follows
        await pilot.pause(0.2)
        second = screen.entries[1].name
        verdict = next(v for v in screen.comparison.verdicts if v.run == second)
        assert short_verdict(verdict) in _flat(_text(app, "#compare-detail"))


async def test_a_picked_run_reads_differently_from_an_unpicked_one(tmp_path: Path) -> None:
    paths = four_runs(tmp_path / "runs")
    app = GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = await _open(pilot, paths)
        await pilot.press("space")  # the highlighted (first) run leaves the comparison
        await wait_for(pilot, lambda: len(screen.comparison.runs) == 3)
        await pilot.pause(0.2)
        lines = [line.strip("│ ") for line in _text(app, "#compare-runs") if line.strip()]
        first = screen.entries[0].name
        assert lines[0].startswith(NOT_PICKED.strip()) and first[:8] in lines[0], lines
        assert all(line.startswith(PICKED.strip()) for line in lines[1:4]), lines


async def test_the_target_leaving_the_selection_is_said(tmp_path: Path) -> None:
    paths = four_runs(tmp_path / "runs")
    app = GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = await _open(pilot, paths)
        assert screen.target_name == "baseline-long"
        names = [e.name for e in screen.entries]
        await pilot.press(*["down"] * names.index("baseline-long"), "space")
        await wait_for(pilot, lambda: screen.target_name not in (None, "baseline-long"))
        await wait_for(pilot, lambda: any("baseline-long" in n for n in notes(app)))
        (said,) = [n for n in notes(app) if "baseline-long" in n]
        assert f"the target is now {screen.target_name}" in said


@pytest.mark.parametrize("width", [30, 47, 60, 90, 125, 200])
def test_the_verdict_columns_fit_the_width(width: int) -> None:
    """No horizontal scroll: a cut verdict read "not compar" at the border."""
    names = ["baseline-long", "short-a", OTHER]
    widths = fit_columns(width, names, ["mslt-demo", "a-longer-plan-name"])
    total = sum(w + CELL_PAD for _, w in widths.columns)
    assert total <= width
    assert widths.verdict >= (24 if width >= 60 else 8)
