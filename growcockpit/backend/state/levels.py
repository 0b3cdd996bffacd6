"""Level snapshots: the model as it entered a `coalesce`, the partner of a later
`decoalesce`/`interpolate`, and how a checkpoint saves and restores them.

They are keyed by that coalesce stage's index, exactly as the plan walk names them
(`StageShape.level`, `StageShape.open_levels`): the backend keeps no level stack logic of
its own. They live in `state/` because a checkpoint carries them; the operators in
`loop/operators.py` create and consume them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import nn

from growcockpit.backend.model import model_from_saved
from growcockpit.plan.shapes import resolve_shapes
from growcockpit.plan.types import Plan


@dataclass
class LevelSnapshot:
    """A model as it was just before coalesce stage `stage` shrank it."""

    stage: int
    layers: int
    width: int
    pairing: str
    model: nn.Module


def open_levels_at(plan: Plan, stage_index: int, entered: bool) -> tuple[int, ...]:
    """The open levels at a position: after stage `stage_index`'s operator when
    `entered`, else before it."""
    shapes = resolve_shapes(plan)
    at = stage_index if entered else stage_index - 1
    return shapes[at].open_levels if 0 <= at < len(shapes) else ()


def levels_to_save(levels: dict[int, LevelSnapshot]) -> list[dict[str, Any]]:
    return [
        {
            "stage": lv.stage,
            "layers": lv.layers,
            "width": lv.width,
            "pairing": lv.pairing,
            "config": lv.model.config.to_dict(),  # type: ignore[operator, union-attr]
            "state": lv.model.state_dict(),
        }
        for lv in levels.values()
    ]


def levels_from_saved(
    saved: list[dict[str, Any]],
    open_levels: tuple[int, ...],
    model_type: type[nn.Module],
    config_type: Any,
) -> dict[int, LevelSnapshot]:
    """Rebuild the snapshots of a checkpoint; one written before levels were keyed by
    stage (no "stage") takes its keys, in order, from the plan walk's open levels."""
    out: dict[int, LevelSnapshot] = {}
    for i, lv in enumerate(saved):
        model = model_from_saved(model_type, config_type, lv["config"], lv["state"])
        stage = int(lv["stage"]) if "stage" in lv else open_levels[i]
        out[stage] = LevelSnapshot(stage, lv["layers"], lv["width"], lv["pairing"], model)
    return out
