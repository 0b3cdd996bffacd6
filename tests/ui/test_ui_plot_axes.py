"""The dashboard's plot keys: x cycles the x axis of every plot, [ ] 0 zoom, < > the
loss smoothing (TWEMA, its factor in the title), r raw."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_fixtures import settle, wait_for, write_recorded_run

from growcockpit.session.smoothing import DEFAULT_FACTOR
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.widgets import LossPlot, ThroughputPlot

SIZE = (160, 48)


async def test_x_cycles_every_plot_through_step_tokens_time_and_flops(tmp_path: Path) -> None:
    app = GrowCockpitApp(run_dir=write_recorded_run(tmp_path / "run"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        plot = app.screen.query_one(LossPlot)
        throughput = app.screen.query_one(ThroughputPlot)
        assert f"loss (TWEMA {DEFAULT_FACTOR:g}) · x: step" in str(plot.border_title)
        assert max(plot.shown.curves["train"].xs) == 80
        expected = [
            ("k tokens", 2048 * 80 / 1e3),
            ("training s", 80 * 0.5 + 0.01 + 0.12),  # the 30 s pause is left out
            ("estimated", None),
            ("step", 80.0),
        ]
        for label, top in expected:
            before = plot.shown
            await pilot.press("x")
            await wait_for(pilot, lambda before=before: plot.shown is not before)  # type: ignore[misc]
            assert plot.shown.xlabel.startswith(label), plot.shown.xlabel
            assert throughput.axis == plot.axis
            if top is not None:
                assert max(plot.shown.curves["train"].xs) == pytest.approx(top)
        # the FLOPs axis is labelled in a FLOPs unit, in the x label and the title
        await pilot.press("x", "x")
        await wait_for(pilot, lambda: plot.axis == "time")
        await pilot.press("x")
        await wait_for(pilot, lambda: plot.shown.xlabel.startswith("estimated"))
        assert plot.shown.xlabel.endswith("FLOPs") and "estimated FLOPs" in str(plot.border_title)


async def test_zoom_keys_halve_double_and_reset_the_window(tmp_path: Path) -> None:
    app = GrowCockpitApp(run_dir=write_recorded_run(tmp_path / "run"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        plot = app.screen.query_one(LossPlot)
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: plot.zoom == 1 and min(plot.shown.curves["train"].xs) > 1)
        assert min(plot.shown.curves["train"].xs) >= 80 - 79 / 2  # the latest half
        assert all(40 <= x <= 80 for x, _ in plot.shown.markers)
        assert "zoom ×2" in str(plot.border_title)
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: min(plot.shown.curves["train"].xs) >= 80 - 79 / 4)
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: plot.zoom == 1)
        await pilot.press("0")
        await wait_for(pilot, lambda: min(plot.shown.curves["train"].xs) == 1)
        assert app.screen.query_one(ThroughputPlot).zoom == 0


async def test_smoothing_keys_change_the_factor_and_r_shows_the_raw_loss(tmp_path: Path) -> None:
    app = GrowCockpitApp(run_dir=write_recorded_run(tmp_path / "run"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        plot = screen.query_one(LossPlot)
        with screen.session.lock:  # type: ignore[attr-defined]
            raw = list(screen.session.state.train_loss.ys)  # type: ignore[attr-defined]
        smoothed = plot.shown.curves["train"].ys
        assert smoothed[0] == raw[0] and smoothed != raw  # debiased start, smoothed after
        await pilot.press("greater_than_sign")
        await wait_for(pilot, lambda: "TWEMA 0.95" in str(plot.border_title))
        smoother = plot.shown.curves["train"].ys
        spread = lambda ys: max(ys) - min(ys)  # noqa: E731
        assert spread(smoother) < spread(smoothed) < spread(raw)
        await pilot.press("less_than_sign", "less_than_sign")
        await wait_for(pilot, lambda: plot.factor == 0.8)
        await pilot.press("r")
        await wait_for(pilot, lambda: plot.shown.curves["train"].ys == raw)
        assert "loss (raw)" in str(plot.border_title)
        await pilot.press("greater_than_sign")  # smoothing again, one step up
        await wait_for(pilot, lambda: not plot.raw and plot.factor == 0.9)
