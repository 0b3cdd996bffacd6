"""Replace the not-yet-started stages of a plan (the `edit_stages` command)."""

from __future__ import annotations

import copy
import dataclasses

from growcockpit.plan.budget import apply_fit, fit_budget
from growcockpit.plan.errors import PlanError
from growcockpit.plan.types import Plan, Stage
from growcockpit.plan.validate import validate_plan


def replace_remaining_stages(
    plan: Plan, started: int, new_stages: list[Stage], source: str = "<edit_stages>"
) -> Plan:
    """A new plan: stages[:started] of `plan`, then `new_stages`.

    `started` counts the stages that have begun (the running one included);
    they are kept as they are. With a budget, the fill stage is refitted. The result is validated as a whole and a
    `PlanError` raised if it is invalid; `plan` is never modified.
    """
    if not 0 <= started <= len(plan.stages):
        raise PlanError(
            f"started = {started} is outside 0..{len(plan.stages)}; "
            "give the number of stages that have already begun",
            key="stages",
            source=source,
        )
    stages = copy.deepcopy(plan.stages[:started]) + copy.deepcopy(list(new_stages))
    result = dataclasses.replace(copy.deepcopy(plan), stages=stages)
    apply_fit(result, fit_budget(result))  # the fill stage absorbs the edit
    validate_plan(result, source=source)
    return result


def end_stage_early(plan: Plan, index: int, steps_done: int) -> Plan:
    """A new plan in which stage `index` ran `steps_done` steps (advance = "plateau" fired
    before its `steps`): totals and the LR schedule follow, and with a budget a fill stage
    that has not started yet is refitted so the run still spends its budget."""
    result = copy.deepcopy(plan)
    result.stages[index].steps = steps_done
    fit = fit_budget(result)
    if fit is not None and fit.ok and fit.fill_index > index:
        apply_fit(result, fit)
    return result
