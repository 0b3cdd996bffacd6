"""The one table of stage operators (`enter`): options, shape rule, labels, verb and
the facts other layers ask of an operator.

Everything that needs to know an operator reads `OPERATORS` here: the shape
walk (`shapes.walk_shapes`), validation (which options apply, which operators
a ramp can gate: `recipe_checks.RAMP_OPERATORS`), saving (which options are
written next to `enter`), `plan show` and the cockpit (labels, the stage list's
action, the stage form's option fields), the run state (does it change the
model), the sharded stage change (which operators grow shard by shard:
`backend/parallel/fsdp_grow.py`), and the backend's dispatch
(`backend/loop/operators.py` maps each name to its grow function, the one table
that cannot live here because plan knows no torch; a test checks both cover the
same names). Those readers derive their sets from the rows, so an operator's
name is written once.

A new operator goes here (an `OperatorSpec` with its shape rule), in
`types.Operator`, in `grow/` (the function that transforms the model) and in
`backend/loop/operators.py` (one line calling it), each with its tests.

The shape rules themselves are in `shape_rules.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import get_args

from growcockpit.plan.probe import candidate_stages
from growcockpit.plan.shape_rules import (
    ShapeInput,
    ShapeRule,
    ShapeStep,
    asked_shape,
    coalesce_rule,
    continue_rule,
    init_rule,
    return_to_level_rule,
    stack_rule,
)
from growcockpit.plan.types import Operator, Stage


def _probe(x: ShapeInput) -> ShapeStep:
    """probe: the shape its first candidate gives (plan/probe.py checks they all agree)."""
    first = next(iter(candidate_stages(x.stage)), None)
    spec = OPERATORS.get(first.enter) if first is not None else None
    if first is None or spec is None or spec.name in ("probe", "init"):
        return ShapeStep(asked_shape(x))
    step = spec.rule(ShapeInput(x.index, first, x.prev, x.model, x.levels))
    return ShapeStep(step.shape, [], step.opens, step.returns_to)


# ---- labels --------------------------------------------------------------------------
def _alpha(stage: Stage, family: str) -> str:
    return f"α={stage.interpolation_alpha(family):g}"


# each operator option → its part of the label, or None when it says nothing worth showing
OPTION_LABELS: dict[str, Callable[[Stage, str], str | None]] = {
    "source": lambda s, _f: s.source,
    "pairing": lambda s, _f: s.pairing,
    "alpha": _alpha,
    "init": lambda s, _f: None if s.init == "copy" else f"{s.init} init",
    "ramp_steps": lambda s, _f: None if s.ramp_steps is None else f"ramp {s.ramp_steps}",
    "probe_steps": lambda s, _f: f"{s.probe_steps} steps each",
    "candidates": lambda s, f: " | ".join(operator_label(c, f) for c in candidate_stages(s)),
}


@dataclass(frozen=True)
class OperatorSpec:
    """One operator: its stage options, shape rule, how the cockpit names it, and how the
    backend may run it."""

    name: str
    verb: str  # what it does to the model, for one-line descriptions
    action: str  # the cockpit's stage list: "<action> to 4 layers, train all, 100 steps"
    options: tuple[str, ...]  # Stage fields that belong to this operator
    rule: ShapeRule
    changes_model: bool = True  # False: no grow event, no loss probe around it
    # True: under FSDP every rank builds the new model from its own shards, never
    # gathering the whole model (the others gather, apply the operator, reshard)
    shard_local: bool = False

    @property
    def ramps(self) -> bool:
        """Whether a ramp (`ramp_steps`) can gate the blocks it adds: exactly the operators
        that take the option, so the fact is written once."""
        return "ramp_steps" in self.options

    def label(self, stage: Stage, family: str = "bert") -> str:
        """e.g. "stack (top)", "interpolate (adjacent, α=0.25)"."""
        parts = [p for o in self.options if (p := OPTION_LABELS[o](stage, family))]
        return f"{self.name} ({', '.join(parts)})" if parts else self.name


OPERATORS: dict[str, OperatorSpec] = {
    spec.name: spec
    for spec in (
        OperatorSpec(
            "init", "builds the model", "build the model", (), init_rule, changes_model=False
        ),
        OperatorSpec(
            "continue",
            "keeps the model",
            "keep the model",
            (),
            continue_rule,
            changes_model=False,
            shard_local=True,
        ),
        OperatorSpec(
            "stack",
            "copies blocks to grow depth",
            "stack new layers",
            ("source", "init", "ramp_steps"),
            stack_rule,
            shard_local=True,
        ),
        OperatorSpec(
            "coalesce",
            "halves width and/or depth",
            "coalesce layers",
            ("pairing",),
            coalesce_rule,
        ),
        OperatorSpec(
            "decoalesce",
            "doubles width and/or depth back to a level",
            "de-coalesce layers",
            ("pairing", "ramp_steps"),
            return_to_level_rule,
        ),
        OperatorSpec(
            "interpolate",
            "doubles back to a level and mixes in its weights",
            "interpolate layers",
            ("pairing", "alpha"),
            return_to_level_rule,
        ),
        OperatorSpec(
            "probe",
            "tries candidate operators for probe_steps each and keeps the best",
            "probe",
            ("probe_steps", "candidates"),
            _probe,
        ),
    )
}
OPERATOR_NAMES: tuple[str, ...] = tuple(OPERATORS)
assert get_args(Operator) == OPERATOR_NAMES, "types.Operator and the table must agree"

# the value of each operator option that means "not used" (a stage may carry it under any operator)
OPTION_DEFAULTS: dict[str, object] = {
    "source": "top",
    "pairing": "adjacent",
    "alpha": None,
    "init": "copy",
    "ramp_steps": None,
    "probe_steps": None,
    "candidates": [],
}


def operators_with(option: str) -> tuple[str, ...]:
    """The operators that take `option`."""
    return tuple(name for name, spec in OPERATORS.items() if option in spec.options)


def operators_where(fact: Callable[[OperatorSpec], bool]) -> tuple[str, ...]:
    """The operators whose row has `fact`, in table order (e.g. `lambda s: s.shard_local`)."""
    return tuple(name for name, spec in OPERATORS.items() if fact(spec))


def operator_label(stage: Stage, family: str = "bert") -> str:
    """The stage's operator with the options that matter for it; unknown operators as written."""
    spec = OPERATORS.get(stage.enter)
    return spec.label(stage, family) if spec is not None else stage.enter


def changes_model(operator: str) -> bool:
    """Whether entering with `operator` transforms the model (unknown: assume it does)."""
    spec = OPERATORS.get(operator)
    return spec.changes_model if spec is not None else True
