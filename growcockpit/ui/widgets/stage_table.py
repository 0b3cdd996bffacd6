"""A plan's stages: operator, depth, which layers train, steps, lr, advance, est. cost."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.text import Text

from growcockpit.plan.budget import fill_index
from growcockpit.plan.operators import operator_label
from growcockpit.plan.show import layer_ranges
from growcockpit.plan.types import Plan, Stage, trainable_layer_ids
from growcockpit.ui.widgets.steady_table import SteadyTable

COLUMNS = (
    "#",
    "stage",
    "enter",
    "layers",
    "train",
    "steps",
    "lr",
    "advance",
    "step cost",
    "share",
)


def freeze_text(stage: Stage, previous: int) -> str:
    try:
        ids = layer_ranges(trainable_layer_ids(stage, previous)) or "none"
    except ValueError:
        ids = "?"
    return f"{stage.train}: {ids}"


def stage_rows(plan: Plan, cost: Any = None) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    previous = 0
    cost_stages = list(getattr(cost, "stages", None) or [])
    baseline = getattr(cost, "baseline_total", 0.0) or 0.0
    fill = fill_index(plan)
    for i, stage in enumerate(plan.stages):
        layers = str(stage.layers) if stage.width is None else f"{stage.layers} × w{stage.width}"
        lr = f"{stage.lr:g}" if stage.lr is not None else f"{plan.optim.lr:g}"
        sc = cost_stages[i] if i < len(cost_stages) else None
        rel = getattr(sc, "rel_step_cost", None)
        share = getattr(sc, "total", None)
        rows.append(
            (
                str(i + 1),
                stage.name,
                operator_label(stage, plan.model.family),
                layers,
                freeze_text(stage, previous),
                f"{stage.steps}*" if i == fill else str(stage.steps),  # *: fitted to the budget
                lr,
                stage.advance,
                "–" if rel is None else f"{rel:.2f}×",
                "–" if share is None or not baseline else f"{100 * share / baseline:.0f}%",
            )
        )
        previous = stage.layers
    return rows


class StageTable(SteadyTable[str | Text]):
    """Rows are stages; a row with problems is marked ⚠, a locked (started) one 🔒."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        for label in COLUMNS:
            self.add_column(label, key=label)
        self._rows: list[tuple[str, ...]] = []

    def show_plan(
        self,
        plan: Plan,
        cost: Any = None,
        bad_rows: set[int] | None = None,
        locked: int = 0,
    ) -> None:
        """Show the plan's stages, touching only the cells that changed."""
        rows = stage_rows(plan, cost)
        bad = bad_rows or set()
        marked = []
        for i, row in enumerate(rows):
            mark = "⚠" if i in bad else ("·" if i < locked else "")
            # a `str` cell is markup to DataTable: a stage named "[x]" shows as written
            marked.append((f"{row[0]}{mark}", *(escape(cell) for cell in row[1:])))
        if len(marked) != len(self._rows):
            cursor = self.cursor_row
            self.clear()
            for i, row in enumerate(marked):
                self.add_row(*row, key=str(i))
            if marked:
                self.move_cursor(row=min(cursor, len(marked) - 1), animate=False)
        else:
            for i, (old, new) in enumerate(zip(self._rows, marked, strict=True)):
                for label, a, b in zip(COLUMNS, old, new, strict=True):
                    if a != b:
                        self.update_cell(str(i), label, b, update_width=True)
        self._rows = marked

    def rows_plain(self) -> list[tuple[str, ...]]:
        return list(self._rows)
