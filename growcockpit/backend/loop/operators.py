"""The backend's side of the operator table: each plan operator's grow function.

`plan/operators.py` is the one table of operators (options, shape rule,
label). Here each name maps to the function that transforms the model; the
two must name the same operators (tests/plan/test_plan_operators.py checks).

Level snapshots (`state/levels.py`) are what a `coalesce` leaves for a later
`decoalesce`/`interpolate`. A grow function never changes the levels it is handed: it
returns the levels open after its stage (`Grown.levels`), which the caller keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from growcockpit.backend.state.levels import LevelSnapshot
from growcockpit.grow import (
    GrowResult,
    coalesce_model,
    decoalesce_model,
    get_layers,
    interpolate_model,
    stack_layers,
)
from growcockpit.plan.shapes import StageShape
from growcockpit.plan.types import Stage


@dataclass
class GrowInput:
    model: nn.Module
    stage: Stage
    shape: StageShape
    family: str
    levels: dict[int, LevelSnapshot]  # open levels, by coalesce stage index


@dataclass(frozen=True)
class Grown:
    """An operator's outcome: the stage's model, what changed, and the open levels after it."""

    model: nn.Module
    result: GrowResult | None
    levels: dict[int, LevelSnapshot]


GrowFn = Callable[[GrowInput], Grown]


def _keep(x: GrowInput) -> Grown:
    return Grown(x.model, None, x.levels)


def _stack(x: GrowInput) -> Grown:
    added = x.stage.layers - len(get_layers(x.model))
    return Grown(x.model, stack_layers(x.model, added, x.stage.source, x.stage.init), x.levels)


def _changes(x: GrowInput) -> tuple[bool, bool]:
    return x.shape.width != x.shape.prev_width, x.shape.layers != x.shape.prev_layers


def _coalesce(x: GrowInput) -> Grown:
    width, depth = _changes(x)
    small, result = coalesce_model(x.model, width=width, depth=depth, pairing=x.stage.pairing)
    level = LevelSnapshot(
        x.shape.index, x.shape.prev_layers, x.shape.prev_width, x.stage.pairing, x.model.to("cpu")
    )
    return Grown(small, result, {**x.levels, x.shape.index: level})


def _level(x: GrowInput) -> LevelSnapshot:
    if x.shape.level is None or x.shape.level not in x.levels:
        raise ValueError(
            f"no level snapshot of {x.shape.layers} layers × width {x.shape.width} to return to; "
            "decoalesce/interpolate must follow a coalesce from that shape"
        )
    return x.levels[x.shape.level]


def _decoalesce(x: GrowInput) -> Grown:
    level = _level(x)
    width, depth = _changes(x)
    model, result = decoalesce_model(
        x.model.to("cpu"),
        width=width,
        depth=depth,
        pairing=level.pairing,
        target_config=level.model.config,
    )
    return Grown(model, result, x.levels)


def _interpolate(x: GrowInput) -> Grown:
    level = _level(x)
    width, depth = _changes(x)
    alpha = x.stage.interpolation_alpha(x.family)
    model, result = interpolate_model(
        level.model, x.model.to("cpu"), alpha=alpha, width=width, depth=depth, pairing=level.pairing
    )
    return Grown(model, result, x.levels)


def _unresolved(x: GrowInput) -> Grown:
    raise ValueError("a probe stage is replaced by its best candidate before its operator runs")


GROW_FUNCTIONS: dict[str, GrowFn] = {
    "init": _keep,  # the engine builds the first model before any operator runs
    "continue": _keep,
    "stack": _stack,
    "coalesce": _coalesce,
    "decoalesce": _decoalesce,
    "interpolate": _interpolate,
    "probe": _unresolved,
}


def apply_operator(x: GrowInput) -> Grown:
    """Run the stage's operator; its `levels` are exactly the levels the plan walk says are
    open after the stage (`x.levels` is left as it was)."""
    grow = GROW_FUNCTIONS.get(x.stage.enter)
    if grow is None:
        raise ValueError(f'unknown operator enter = "{x.stage.enter}"')
    grown = grow(x)
    kept = {s: level for s, level in grown.levels.items() if s in x.shape.open_levels}
    return Grown(grown.model, grown.result, kept)
