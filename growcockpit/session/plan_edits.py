"""The designer's edits to its `Plan`: one form field, and the stage list.

A field edit names the validator's key for the field and the object its value
is set on. A stage-list edit (add, duplicate, remove, move) changes
`plan.stages` in place and says which row to select next and what to tell the
user, or changes nothing and says why; the screen then redraws. Stages before
`locked` (those a running run has already started) never change.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from growcockpit.plan.types import BudgetSpec, Plan
from growcockpit.session.plan_drafts import new_plan, next_stage, unique_name

STARTED = "That stage has already started: only later stages can change."


def field_target(plan: Plan, scope: str, name: str, stage: int) -> tuple[str, Any]:
    """The validator's key of a form field (`stages[1].steps`, `model.d_model`) and its object."""
    if scope == "stage":
        return f"stages[{stage}].{name}", plan.stages[stage]
    if scope == "plan":
        return name, plan
    if scope == "budget":
        return f"budget.{name}", plan.budget if plan.budget is not None else BudgetSpec()
    return f"{scope}.{name}", getattr(plan, scope)


def set_field(plan: Plan, scope: str, name: str, stage: int, value: Any) -> str:
    """Set a form field's value on the plan; returns the validator's key.

    `[budget]` comes into being with its first value and goes when its fields are all
    empty again: a plan without a budget trains its stages' own steps."""
    key, target = field_target(plan, scope, name, stage)
    setattr(target, name, value)
    if scope == "budget":
        empty = target.baseline_steps is None and target.minutes is None and target.unit_ms is None
        plan.budget = None if empty else target
    return key


@dataclass(frozen=True)
class StageEdit:
    """An edit's outcome: the row to select (None: nothing changed), a note or a warning."""

    select: int | None = None
    note: str = ""
    warning: str = ""


def add_stage(plan: Plan, selected: int, locked: int) -> StageEdit:
    """A stage after the selected one (never among the locked ones), continuing from it."""
    at = max(selected, locked - 1) if locked else selected
    stage = next_stage(plan, at) if plan.stages else new_plan().stages[0]
    plan.stages.insert(at + 1 if plan.stages else 0, stage)
    return StageEdit(at + 1, note=f"added stage {at + 2}: {stage.name}")


def duplicate_stage(plan: Plan, selected: int, locked: int) -> StageEdit:
    """A copy of the selected stage right after it; a copy of `init` continues instead."""
    if not plan.stages:
        return StageEdit()
    if selected + 1 < locked:
        return StageEdit(warning=STARTED)
    src = plan.stages[selected]
    dup = copy.deepcopy(src)
    dup.name = unique_name(src.name, {s.name for s in plan.stages})
    if dup.enter == "init":
        dup.enter = "continue"
    plan.stages.insert(selected + 1, dup)
    return StageEdit(selected + 1)


def remove_stage(plan: Plan, selected: int, locked: int) -> StageEdit:
    """Drop the selected stage; a plan keeps at least one."""
    if not plan.stages:
        return StageEdit()
    if selected < locked:
        return StageEdit(warning=STARTED)
    if len(plan.stages) == 1:
        return StageEdit(warning="A plan needs at least one stage.")
    gone = plan.stages.pop(selected)
    return StageEdit(min(selected, len(plan.stages) - 1), note=f"removed stage {gone.name}")


def move_stage(plan: Plan, selected: int, delta: int, locked: int) -> StageEdit:
    """Swap the selected stage with its neighbour `delta` rows away."""
    i, j = selected, selected + delta
    if not 0 <= j < len(plan.stages):
        return StageEdit()
    if min(i, j) < locked:
        return StageEdit(warning=STARTED)
    stages = plan.stages
    stages[i], stages[j] = stages[j], stages[i]
    return StageEdit(j)


STAGE_LIST_EDITS: dict[str, Callable[[Plan, int, int], StageEdit]] = {
    "add": add_stage,
    "duplicate": duplicate_stage,
    "remove": remove_stage,
}
