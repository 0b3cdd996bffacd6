"""Every screen usable at 80x24 (the size over SSH): the overview keeps
its layers table (the tab scrolls), the Timing tab's plot keeps a readable height, the
designer keeps its cost line and its buttons on screen."""

from __future__ import annotations

from pathlib import Path

from textual.widget import Widget
from ui_fixtures import settle, write_plan, write_recorded_run

from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.widgets import LayerTable

NARROW = (80, 24)


def on_screen(widget: Widget, rows: int = 1) -> bool:
    """At least `rows` rows of the widget are within the 80x24 screen."""
    region = widget.region.intersection(widget.screen.region)
    return widget.display and region.height >= rows and region.width > 0


async def test_overview_keeps_the_layers_table(tmp_path: Path) -> None:
    run = write_recorded_run(tmp_path / "run", finished=False, upto_step=60)
    app = GrowCockpitApp(run_dir=run)
    async with app.run_test(size=NARROW) as pilot:
        screen = await settle(pilot)
        table = screen.query_one("#layer-table", LayerTable)
        assert table.display and table.row_count == 4
        assert on_screen(screen.query_one("#loss-plot"), rows=10)
        assert on_screen(table, rows=3)  # its head shows under the plot
        table.scroll_visible(animate=False)  # the tab scrolls to the rest
        await pilot.pause(0.1)
        assert on_screen(table, rows=table.row_count + 3)


async def test_timing_tab_plot_keeps_its_height(tmp_path: Path) -> None:
    run = write_recorded_run(tmp_path / "run", finished=False, upto_step=60)
    app = GrowCockpitApp(run_dir=run)
    async with app.run_test(size=NARROW) as pilot:
        screen = await settle(pilot)
        await pilot.press("3")
        await pilot.pause(0.2)
        plot = screen.query_one("#throughput")
        assert plot.region.height >= 10  # was 0: the timing table took the whole tab
        assert on_screen(plot, rows=5)
        plot.scroll_visible(animate=False)
        await pilot.pause(0.1)
        assert on_screen(plot, rows=10)


async def test_designer_keeps_cost_line_and_buttons(tmp_path: Path) -> None:
    app = GrowCockpitApp(plan_path=write_plan(tmp_path / "p.toml"))
    async with app.run_test(size=NARROW) as pilot:
        await pilot.pause(0.3)
        cost = app.screen.query_one("#plan-cost")
        assert on_screen(cost) and "estimated compute" in str(cost.render())
        for button in ("#launch", "#save"):
            assert on_screen(app.screen.query_one(button)), button
        await pilot.press("tab")  # on another tab the cost line stays
        assert on_screen(cost)
