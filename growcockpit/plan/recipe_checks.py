"""Validation of the growth-recipe options of a stage.

Kept apart from `validate` so each recipe's rules read as one table of
"where it applies, and the fix when it does not". Every problem is a
(key path, message) pair like the rest of validation.
"""

from __future__ import annotations

from growcockpit.plan.families import FAMILY_FACTS
from growcockpit.plan.operators import operators_where
from growcockpit.plan.shapes import StageShape
from growcockpit.plan.types import STACK_INITS, Plan, Stage

Problem = tuple[str, str]

# operators whose new blocks a ramp can gate (decoalesce: only with depth growth)
RAMP_OPERATORS: tuple[str, ...] = operators_where(lambda spec: spec.ramps)
_RAMP_NAMES = " or ".join(f'"{op}"' for op in RAMP_OPERATORS)  # "stack" or "decoalesce"


def recipe_problems(plan: Plan, shapes: list[StageShape]) -> list[Problem]:
    problems: list[Problem] = []
    for index, (stage, shape) in enumerate(zip(plan.stages, shapes, strict=False)):
        problems += _ramp(f"stages[{index}].ramp_steps", stage, shape)
        problems += _init(f"stages[{index}].init", stage, plan.model.family)
        problems += _layer_drop(f"stages[{index}].layer_drop", stage)
        problems += _rewarmup(f"stages[{index}].rewarmup_steps", index, stage)
    return problems


def _ramp(key: str, stage: Stage, shape: StageShape) -> list[Problem]:
    k = stage.ramp_steps
    if k is None:
        return []
    if k < 1:
        return [
            (key, f"must be ≥ 1, got {k}; set the number of steps over which new blocks fade in")
        ]
    if stage.enter == "interpolate":
        return [
            (
                key,
                "interpolate mixes in the saved level's weights, so no gate can keep the function; "
                'use enter = "decoalesce" with ramp_steps, or remove ramp_steps',
            )
        ]
    if stage.enter not in RAMP_OPERATORS:
        return [
            (
                key,
                f'gates the blocks a growing operator adds, but enter = "{stage.enter}" adds none; '
                f"use it on an enter = {_RAMP_NAMES} stage, or remove ramp_steps",
            )
        ]
    if stage.enter == "decoalesce" and shape.layers == shape.prev_layers:
        return [
            (
                key,
                "this decoalesce only widens, which already keeps the function "
                "and adds no blocks to gate; remove ramp_steps",
            )
        ]
    if k > stage.steps:
        return [
            (
                key,
                f"the ramp ({k} steps) must end within the stage's {stage.steps} steps; "
                f"set ramp_steps ≤ {stage.steps}",
            )
        ]
    return []


def _init(key: str, stage: Stage, family: str) -> list[Problem]:
    if stage.init == "copy":
        return []
    if stage.init not in STACK_INITS:
        return [(key, f'unknown value "{stage.init}"; use "copy" or "zero"')]
    if stage.enter != "stack":
        return [
            (
                key,
                f'"zero" only applies to enter = "stack", not "{stage.enter}"; remove init',
            )
        ]
    facts = FAMILY_FACTS.get(family)  # an unknown family is model.family's own error
    if facts is not None and not facts.identity_init:
        return [
            (
                key,
                f'"zero" cannot make a {family} block the identity (a post-LN block\'s LayerNorm '
                "follows the residual sum); use ramp_steps = K (a gated block) instead",
            )
        ]
    return []


def _layer_drop(key: str, stage: Stage) -> list[Problem]:
    p = stage.layer_drop
    if p == 0.0:
        return []
    if not 0.0 < p < 1.0:
        return [
            (key, f"must be in [0, 1), got {p}; e.g. 0.25 skips a quarter of the middle blocks")
        ]
    if stage.layers < 3:
        return [
            (
                key,
                f"skips blocks other than the first and last, but this stage has only "
                f"{stage.layers} layers; remove layer_drop",
            )
        ]
    return []


def _rewarmup(key: str, index: int, stage: Stage) -> list[Problem]:
    w = stage.rewarmup_steps
    if w is None:
        return []
    if w < 0:
        return [(key, f"must be ≥ 0, got {w}; 0 starts the stage at the full LR")]
    if index == 0:
        return [
            (
                key,
                "is the LR warm-up after a stage's operator, and the first stage has none; "
                "use warmup_steps (or optim.warmup_steps) here",
            )
        ]
    if stage.warmup_steps is not None:
        return [
            (
                key,
                "and warmup_steps both set the warm-up after this stage's operator; keep one",
            )
        ]
    return []
