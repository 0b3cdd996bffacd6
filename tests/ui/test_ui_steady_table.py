"""Tables are wide enough for a new value in the same frame it arrives, not one idle later.

Textual widens a column on the table's next idle but caches drawn lines by a counter the
widening does not move; a frame drawn in between kept "top:2: 2" for "top:2: 2-3" in the
designer on a busy CI machine. These tests read the column width before any idle runs."""

from __future__ import annotations

import dataclasses

from textual.app import App, ComposeResult

from growcockpit.plan import load_plan
from growcockpit.resources import sample_plan
from growcockpit.session.fold.layers import LayerRow
from growcockpit.session.run_state import RunState
from growcockpit.ui.widgets import LayerTable, StageTable
from growcockpit.ui.widgets.steady_table import SteadyTable, cell_width


def content_width(table: SteadyTable[object], label: str) -> int:
    return next(c for c in table.ordered_columns if c.label.plain == label).content_width


async def test_a_stage_cell_that_grows_widens_its_column_at_once() -> None:
    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield StageTable(id="stages")

    plan = load_plan(sample_plan("cpu-demo"))
    async with Host().run_test(size=(80, 20)) as pilot:
        table = pilot.app.query_one(StageTable)
        table.show_plan(plan)
        await pilot.pause()
        assert table.get_row_at(1)[4] == "new: 2-3"
        stages = list(plan.stages)
        stages[1] = dataclasses.replace(stages[1], train="top:2")
        table.show_plan(dataclasses.replace(plan, stages=tuple(stages)))
        assert table.get_row_at(1)[4] == "top:2: 2-3"
        assert content_width(table, "train") >= len("top:2: 2-3")  # before any idle


async def test_a_layer_value_that_arrives_later_widens_its_column_at_once() -> None:
    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield LayerTable(id="layers")

    state = RunState()
    state.layers[0] = LayerRow(id=0)
    async with Host().run_test(size=(160, 20)) as pilot:
        table = pilot.app.query_one(LayerTable)
        table.show_state(state)
        await pilot.pause()
        state.layers[0].update_ratio = 3.4e-3
        table.show_state(state)
        assert content_width(table, "Δθ/θ") >= len("3.4e-03")


def test_cell_width_reads_markup_and_rich_text_as_the_table_does() -> None:
    from rich.text import Text

    assert cell_width("[b]top:2[/b]") == len("top:2")
    assert cell_width(Text("a\nlonger")) == len("longer")
    assert cell_width("") == 0
