"""The `/` filter over the dashboard's plots: the loss and tokens/s plots keep the series
whose names it matches, the heatmap the layers the layer table keeps; a plot it leaves
empty says so on screen; clearing it brings every series back."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from ui_fixtures import T0, screen_text, settle, wait_for, write_recorded_run

from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.widgets import LayerHeatmap, LossPlot, ThroughputPlot

SIZE = (160, 48)


async def _filter(pilot: Pilot[None], pattern: str) -> None:
    """`/`, the prompt's text replaced by `pattern`, Enter."""
    await pilot.press("slash")
    await pilot.pause()
    await pilot.press("ctrl+u", *pattern, "enter")
    await pilot.pause()


async def test_typing_a_filter_changes_which_series_are_drawn(tmp_path: Path) -> None:
    app = GrowCockpitApp(run_dir=write_recorded_run(tmp_path / "run"), clock=lambda: T0 + 100)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        loss = screen.query_one(LossPlot)
        throughput = screen.query_one(ThroughputPlot)
        heatmap = screen.query_one(LayerHeatmap)
        assert set(loss.shown.curves) == {"train", "val"} and not loss.border_subtitle
        train_points = len(loss.shown.curves["train"].xs)

        await _filter(pilot, "val")
        await wait_for(pilot, lambda: set(loss.shown.curves) == {"val"})
        assert str(loss.border_subtitle) == "/val/ · 1 of 2"
        await pilot.press("3")  # tokens/s is not val: its plot says so, not an empty frame
        await wait_for(pilot, lambda: not throughput.shown.curves and throughput.shown.left_out)
        await wait_for(pilot, lambda: "no series matches /val/" in screen_text(app))
        assert str(throughput.border_subtitle) == "/val/ · 0 of 1"

        await _filter(pilot, "^(1|3)$")  # a layer filter: the heatmap keeps those rows
        await pilot.press("2")
        await wait_for(pilot, lambda: heatmap.layers_drawn == [1, 3])
        await wait_for(pilot, lambda: "L1" in screen_text(app))
        text = screen_text(app)
        assert "L3" in text and "L0" not in text and "L2" not in text
        assert str(heatmap.border_subtitle) == "/^(1|3)$/ · 2 of 4"

        await _filter(pilot, "loss|tok")
        await wait_for(pilot, lambda: heatmap.layers_drawn == [])
        await wait_for(pilot, lambda: "no layer matches /loss|tok/" in screen_text(app))
        await pilot.press("1")
        await wait_for(pilot, lambda: set(loss.shown.curves) == {"train", "val"})
        await pilot.press("3")
        await wait_for(pilot, lambda: set(throughput.shown.curves) == {"tokens/s"})

        await pilot.press("escape")  # clears the filter: every series and row is back
        await wait_for(pilot, lambda: not screen.view_filter.active)
        await wait_for(pilot, lambda: set(throughput.shown.curves) == {"tokens/s"})
        assert not throughput.border_subtitle
        await pilot.press("1")
        await wait_for(pilot, lambda: set(loss.shown.curves) == {"train", "val"})
        assert len(loss.shown.curves["train"].xs) == train_points and not loss.border_subtitle
        await pilot.press("2")
        await wait_for(pilot, lambda: heatmap.layers_drawn == [0, 1, 2, 3])
        assert "L0" in screen_text(app) and not heatmap.border_subtitle
