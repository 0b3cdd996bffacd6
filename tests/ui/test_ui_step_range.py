"""Zoom by range: `z` shows steps A-B of a finished run on every plot (any x axis), and
`,` / `.` move a cursor whose logged values the plots give in their lower border."""

from __future__ import annotations

from pathlib import Path

import pytest
from scalar_fixtures import write_wsd_run, wsd_events
from ui_fixtures import loss_at, screen_text, settle

from growcockpit.protocol import Eval, Step
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens.prompt import PromptScreen
from growcockpit.ui.widgets.loss_plot import LossPlot
from growcockpit.ui.widgets.scalar_plot import ScalarPlot

SIZE = (160, 48)


async def _type_range(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("z")
    await pilot.pause(0.2)
    assert isinstance(pilot.app.screen, PromptScreen)
    await pilot.press(*["backspace"] * 12, *text, "enter")
    await pilot.pause(0.3)


async def test_z_shows_steps_30_to_40_and_the_cursor_gives_logged_values(tmp_path: Path) -> None:
    run_dir = write_wsd_run(tmp_path / "run")
    lrs = {ev.step: ev.lr for ev in wsd_events() if isinstance(ev, Step)}
    vals = {ev.step: ev.val_loss for ev in wsd_events() if isinstance(ev, Eval)}
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("r", "v")  # raw loss: the drawn values are the logged ones
        await _type_range(pilot, "30-40")
        screen.flush_plot()
        loss, lr = screen.query_one(LossPlot), screen.query_one(ScalarPlot)
        assert loss.steps == lr.steps == (30, 40)
        assert loss.shown.curves["train"].xs == [float(s) for s in range(30, 41)]
        assert loss.shown.curves["val"].xs == [40.0]
        assert lr.shown.curves["lr"].xs == [float(s) for s in range(30, 41)]
        assert "steps 30-40" in str(loss.border_title)
        await pilot.press("full_stop", "full_stop")  # first press: the middle, 35; then 36
        await pilot.pause(0.2)
        screen.flush_plot()
        assert loss.cursor == lr.cursor == 36
        assert f"step 36: train (raw) {round(loss_at(36), 4):.4g}" in str(loss.border_subtitle)
        assert f"val {vals[40]:.4g}" in str(loss.border_subtitle)  # the nearest eval
        assert f"step 36: lr {lrs[36]:.4g}" in str(lr.border_subtitle)
        await pilot.press("0")
        await pilot.pause(0.2)
        screen.flush_plot()
        assert loss.steps is None and loss.cursor is None
        assert len(loss.shown.curves["train"].xs) == 80
        assert "step 36" not in str(loss.border_subtitle)


async def test_a_range_holds_on_the_tokens_axis(tmp_path: Path) -> None:
    run_dir = write_wsd_run(tmp_path / "run")
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await _type_range(pilot, "30-40")
        await pilot.press("x")
        await pilot.pause(0.2)
        screen.flush_plot()
        loss = screen.query_one(LossPlot)
        assert loss.axis == "tokens"
        xs = loss.shown.curves["train"].xs  # 2048 tokens a step, in k tokens
        assert xs[0] == pytest.approx(30 * 2.048) and xs[-1] == pytest.approx(40 * 2.048)


async def test_a_bad_range_is_refused_in_the_prompt(tmp_path: Path) -> None:
    run_dir = write_wsd_run(tmp_path / "run")
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await _type_range(pilot, "40-30")
        assert isinstance(app.screen, PromptScreen)  # still asking, saying why
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert screen.query_one(LossPlot).steps is None


async def test_a_range_past_the_run_says_there_is_nothing_there(tmp_path: Path) -> None:
    run_dir = write_wsd_run(tmp_path / "run")
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await _type_range(pilot, "500-600")
        screen.flush_plot()
        loss = screen.query_one(LossPlot)
        assert loss.shown.curves == {}
        await pilot.pause(0.2)
        assert "no points in steps 500-600 (0 shows all)" in screen_text(app)
