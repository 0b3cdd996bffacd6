"""`enter = "probe"`: try several operators at a growth point, keep the best.

LAG (arXiv 2406.02469) picks a growth operator by the loss after a short stretch of
training, not at the moment of growth (a function-preserving operator always looks
best at step 0). A probe stage lists `candidates`, each a table of operator keys
(`{ enter = "stack", source = "middle" }`) laid over the stage's own keys; the
backend (backend/loop/probe.py) trains each for `probe_steps` from the same state and goes
on with the lowest validation loss, writing the winner into the plan.

Each candidate is checked as the stage it would be (the whole plan's validation with
that stage in place: shape rule, option applicability, family recipes), its problems
named `stages[i].candidates[j].key`. Pure data, no torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from growcockpit.plan.types import Plan, Stage
from growcockpit.text.safe_text import quoted

PROBE = "probe"
Problem = tuple[str, str]

# the keys a candidate may set (an operator and its options) and the type each takes
CANDIDATE_KEYS: dict[str, tuple[type, ...]] = {
    "enter": (str,),
    "source": (str,),
    "init": (str,),
    "pairing": (str,),
    "ramp_steps": (int,),
    "alpha": (int, float),
}
_TYPE_WORDS = {str: "a string", int: "an integer", float: "a number"}


def _typed(value: object, kinds: tuple[type, ...]) -> bool:
    return isinstance(value, kinds) and not isinstance(value, bool)


def candidate_stage(stage: Stage, item: dict[str, Any]) -> Stage:
    """The stage as candidate `item` makes it (keys of the wrong type are left out)."""
    keys = {k: v for k, v in item.items() if k in CANDIDATE_KEYS and _typed(v, CANDIDATE_KEYS[k])}
    if "alpha" in keys:
        keys["alpha"] = float(keys["alpha"])
    return dataclasses.replace(stage, **keys, probe_steps=None, candidates=[])


def candidate_stages(stage: Stage) -> list[Stage]:
    """Every candidate of a probe stage as a stage (best effort, for shapes and costs)."""
    return [candidate_stage(stage, c) for c in stage.candidates if isinstance(c, dict)]


def with_stage(plan: Plan, index: int, stage: Stage) -> Plan:
    stages = list(plan.stages)
    stages[index] = stage
    return dataclasses.replace(plan, stages=stages)


def _item_problems(key: str, item: object) -> list[Problem]:
    if not isinstance(item, dict):
        return [
            (key, 'expected a table of operator keys, e.g. { enter = "stack", source = "top" }')
        ]
    out: list[Problem] = []
    for name, value in item.items():
        kinds = CANDIDATE_KEYS.get(name)
        if kinds is None:
            valid = ", ".join(CANDIDATE_KEYS)
            out.append((f"{key}.{name}", f'unknown candidate key "{name}"; valid keys: {valid}'))
        elif not _typed(value, kinds):
            out.append((f"{key}.{name}", f"expected {_TYPE_WORDS[kinds[-1]]}, got {quoted(value)}"))
    enter = item.get("enter")
    if enter is None:
        out.append((f"{key}.enter", 'missing; say which operator, e.g. enter = "stack"'))
    elif enter in (PROBE, "init"):
        out.append((f"{key}.enter", f'"{enter}" cannot be a candidate; use e.g. "stack"'))
    return out


ShapeKey = tuple[int, int, int | None]  # layers, width, level of a stage (plan/shapes.py)


def probe_problems(
    plan: Plan,
    collect: Callable[[Plan], list[Problem]],
    shape_of: Callable[[Plan, int], ShapeKey],
) -> list[Problem]:
    """Problems of every probe stage and its candidates; `collect` is the plan's own
    validation (plan/validate.py), run with each candidate in the probe's place, and
    `shape_of` the shape walk's answer for a stage."""
    out: list[Problem] = []
    for index, stage in enumerate(plan.stages):
        key = f"stages[{index}]"
        if stage.enter != PROBE:  # probe keys elsewhere: validate's operator-options check
            continue
        if stage.probe_steps is None or stage.probe_steps < 1:
            out.append((f"{key}.probe_steps", "give the steps each candidate trains, e.g. 20"))
        elif stage.probe_steps > stage.steps:
            out.append(
                (
                    f"{key}.probe_steps",
                    f"{stage.probe_steps} > the stage's steps ({stage.steps}); the winner "
                    "goes on in the stage, so probe for fewer steps",
                )
            )
        if len(stage.candidates) < 2:
            out.append((f"{key}.candidates", "give two or more candidates to choose between"))
        shapes: set[ShapeKey] = set()
        for j, item in enumerate(stage.candidates):
            where = f"{key}.candidates[{j}]"
            item_problems = _item_problems(where, item)
            out += item_problems
            if item_problems:
                continue
            trial = with_stage(plan, index, candidate_stage(stage, item))
            prefix = f"{key}."
            out += [(where + k[len(key) :], p) for k, p in collect(trial) if k.startswith(prefix)]
            shapes.add(shape_of(trial, index))
        if len(shapes) > 1:
            out.append(
                (f"{key}.candidates", "the candidates must give the stage the same shape and level")
            )
    return out
