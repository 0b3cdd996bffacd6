"""The dashboard at 80×24: the plot beside the loss (`v`) yields to the loss where two
plots do not fit (the loss had 3 rows of curve, its legend over them), with a hint, and
comes back when the terminal grows; a read-only cockpit's role stays on the header's
last line instead of wrapping it over two; a pinned baseline's "not comparable" reason,
cut at the plot's border, is wrapped under the plot instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from scalar_fixtures import write_wsd_run
from textual.widgets import OptionList
from ui_fixtures import T0, recorded_events, settle, wait_for, write_events, write_recorded_run

from growcockpit.session.controller import ControllerLock
from growcockpit.session.run_state import RunState
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.widgets import LossPlot, RunHeader
from growcockpit.ui.widgets.loss_plot import PinStanding
from growcockpit.ui.widgets.run_header import fit_role, header_text
from growcockpit.ui.widgets.scalar_plot import LOSS_MIN_ROWS, ScalarHint, ScalarPlot

ROLE = "read-only: controlled by pid 4242917 on a-long-host-name.example.org"


async def test_the_second_plot_yields_at_80x24_and_returns_when_taller(tmp_path: Path) -> None:
    run_dir = write_wsd_run(tmp_path / "run")
    app = GrowCockpitApp(run_dir=run_dir, clock=lambda: T0 + 100.0, workdir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await settle(pilot)
        loss, scalar = screen.query_one(LossPlot), screen.query_one(ScalarPlot)
        hint = screen.query_one(ScalarHint)
        await pilot.press("v")
        await pilot.pause(0.3)
        assert scalar.scalar == "lr" and not scalar.display and hint.display
        assert "lr plot hidden" in str(hint.render())
        assert loss.size.height + 2 >= LOSS_MIN_ROWS  # its border is outside size
        await pilot.resize_terminal(80, 40)
        await wait_for(pilot, lambda: scalar.display and scalar.size.height > 0)
        assert not hint.display and loss.size.height + 2 >= LOSS_MIN_ROWS
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: not scalar.display)
        await pilot.press("v", "v", "v", "v", "v")  # back to none: no hint either
        await pilot.pause(0.3)
        assert scalar.scalar is None and not hint.display


@pytest.mark.parametrize("room", [10, 12, 20, 30, 60])
def test_a_role_fits_its_room(room: int) -> None:
    fitted = fit_role(ROLE, room)
    assert fitted.startswith("read-only")
    assert len(fitted) <= max(room, len("read-only"))


@pytest.mark.parametrize("width", [78, 118, 158])
def test_the_header_keeps_each_line_within_its_width(width: int) -> None:
    state = RunState(plan_name="mslt-demo", trainer="train.py")
    state.step, state.tokens = 1234, 12_345_678
    text = header_text(state, None, width, ROLE)
    lines = text.plain.split("\n")
    assert len(lines) == 3 and all(len(line) <= width for line in lines), lines
    assert "read-only" in lines[-1]


async def test_a_read_only_header_keeps_three_lines_at_80x24(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=20)
    other = ControllerLock(run_dir)
    assert other.try_acquire()
    try:
        app = GrowCockpitApp(run_dir=run_dir)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await settle(pilot)
            head = screen.query_one(RunHeader)
            await wait_for(pilot, lambda: "read-only" in str(head.render()))
            await pilot.pause(0.2)
            assert head.size.height == 3, str(head.render())
    finally:
        other.release()


async def test_a_not_comparable_baseline_is_said_whole_at_80x24(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = write_recorded_run(runs / "mslt-demo")
    events = recorded_events()
    plan = dict(events[0].plan)  # type: ignore[attr-defined]
    events[0].plan = {**plan, "model": {**plan["model"], "family": "llama"}}  # type: ignore[attr-defined]
    (runs / "baseline-llama").mkdir()
    write_events(runs / "baseline-llama" / "events.jsonl", events)
    app = GrowCockpitApp(run_dir=run, runs_root=runs, clock=lambda: T0 + 100)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await settle(pilot)
        plot, below = screen.query_one(LossPlot), screen.query_one(PinStanding)
        await pilot.press("B")
        await wait_for(pilot, lambda: app.screen.query(OptionList))
        await pilot.press("enter")
        await wait_for(pilot, lambda: plot.pinned is not None and below.display)
        said = str(below.render())
        assert "not comparable (family bert vs llama): a different loss, no ratio" in said
        assert "not comparable" not in str(plot.border_subtitle)  # not cut at the border
        assert below.size.height >= 2  # wrapped, not cut
