"""A plan's stages: operator, depth, which layers train, steps, lr, advance, est. cost."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable

from growcockpit.plan.types import Plan, Stage, trainable_layer_ids
from growcockpit.ui.run_state import layer_ranges

COLUMNS = ("#", "stage", "enter", "layers", "train", "steps", "lr", "advance", "rel. cost")


def operator_text(stage: Stage) -> str:
    if stage.enter == "stack":
        return f"stack ({stage.source})"
    if stage.enter in ("coalesce", "decoalesce"):
        return f"{stage.enter} ({stage.pairing})"
    if stage.enter == "interpolate" and stage.alpha is not None:
        return f"interpolate (α={stage.alpha:g})"
    return stage.enter


def stage_rows(plan: Plan, cost: Any = None) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    previous = 0
    cost_stages = list(getattr(cost, "stages", None) or [])
    for i, stage in enumerate(plan.stages):
        try:
            ids = layer_ranges(trainable_layer_ids(stage, previous)) or "none"
        except ValueError:
            ids = "?"
        layers = str(stage.layers) if stage.width is None else f"{stage.layers} × w{stage.width}"
        lr = f"{stage.lr:g}" if stage.lr is not None else f"{plan.optim.lr:g}"
        rel = getattr(cost_stages[i], "rel_step_cost", None) if i < len(cost_stages) else None
        rows.append(
            (
                str(i + 1),
                stage.name,
                operator_text(stage),
                layers,
                f"{stage.train}: {ids}",
                str(stage.steps),
                lr,
                stage.advance,
                "–" if rel is None else f"{rel:.2f}×",
            )
        )
        previous = stage.layers
    return rows


class StageTable(DataTable[str]):
    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        for label in COLUMNS:
            self.add_column(label, key=label)

    def show_plan(self, plan: Plan, cost: Any = None) -> None:
        self.clear()
        for row in stage_rows(plan, cost):
            self.add_row(*row, key=row[0])
