"""The plot beside the loss: `v` cycles LR, total grad norm, update ratio, step time and
tokens/s (then hides it); what it draws is the run's logged values, on the loss plot's
x axis and zoom, and the LR plot marks the schedule's phases."""

from __future__ import annotations

from pathlib import Path

import pytest
from scalar_fixtures import expected_totals, write_wsd_run, wsd_events
from ui_fixtures import settle

from growcockpit.protocol import Step
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.widgets.loss_plot import LossPlot
from growcockpit.ui.widgets.scalar_plot import ScalarPlot

SIZE = (160, 48)


def drawn(plot: ScalarPlot) -> dict[float, float]:
    (curve,) = plot.shown.curves.values()
    return dict(zip(curve.xs, curve.ys, strict=True))


async def test_v_cycles_the_scalars_and_each_draws_its_logged_values(tmp_path: Path) -> None:
    run_dir = write_wsd_run(tmp_path / "run")
    events = wsd_events()
    steps = [ev for ev in events if isinstance(ev, Step)]
    grads, ratios = expected_totals(events)
    expected = {
        "lr": {float(s.step): s.lr for s in steps},
        "grad_norm": grads,
        "update_ratio": ratios,
        "step_ms": {float(s.step): s.step_ms for s in steps},
        "tokens_s": {float(s.step): s.tokens_per_s for s in steps},
    }
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        plot = screen.query_one(ScalarPlot)
        assert plot.scalar is None and plot.region.area == 0  # hidden until asked for
        for key, values in expected.items():
            await pilot.press("v")
            await pilot.pause(0.2)
            screen.flush_plot()
            assert plot.scalar == key
            assert plot.region.area > 0
            got = drawn(plot)
            assert got.keys() == {float(x) for x in values}, key
            for x, y in values.items():
                assert got[float(x)] == pytest.approx(y, rel=1e-9), (key, x)
        await pilot.press("v")
        await pilot.pause(0.2)
        assert plot.scalar is None and plot.region.area == 0


async def test_lr_plot_marks_warmups_and_the_wsd_decay(tmp_path: Path) -> None:
    run_dir = write_wsd_run(tmp_path / "run")
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("v")
        await pilot.pause(0.2)
        screen.flush_plot()
        plot = screen.query_one(ScalarPlot)
        marks = {(x, kind) for x, kind in plot.shown.markers if kind in ("warmup", "decay")}
        # stage 1 warms 8 steps; stage 2 re-warms min(8, 40/10) = 4 from step 40;
        # 80 steps, the last quarter decays: from step 60
        assert marks == {(8.0, "warmup"), (44.0, "warmup"), (60.0, "decay")}
        assert "warm-up end" in str(plot.border_title) and "decay" in str(plot.border_title)


async def test_scalar_plot_shares_the_loss_plots_axis_and_zoom(tmp_path: Path) -> None:
    run_dir = write_wsd_run(tmp_path / "run")
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("v", "x", "left_square_bracket")
        await pilot.pause(0.2)
        screen.flush_plot()
        loss, scalar = screen.query_one(LossPlot), screen.query_one(ScalarPlot)
        assert (scalar.axis, scalar.zoom) == (loss.axis, loss.zoom) == ("tokens", 1)
        assert scalar.shown.span == loss.shown.span
