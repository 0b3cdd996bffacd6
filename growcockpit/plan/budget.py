"""Fit a plan to its `[budget]`: the `fill` stage's steps make the cost equal the budget.

Growth plans are compared with the full-depth baseline at equal *compute*,
not equal steps: a growth stage's step is cheaper, so with
the baseline's step count a growth plan would get only part of its budget.
The budget is in the cost model's units (`cost.estimate_cost`, defaults:
refined, r = 2, the default head cost):

- ``baseline_steps = N``: N × the cost of one full-depth baseline step.
- ``minutes = M``: M·60 000 / ``unit_ms`` units, where ``unit_ms`` is the
  measured wall time of one cost unit on the machine (``plan show
  --calibrate`` prints it: the calibrated full-depth step time divided by
  that step's units).

The fill stage's step cost does not depend on its own step count, so the fit
is one division: steps = ⌊(budget − fixed) / fill step cost⌋, where fixed is
the cost of every other stage. Flooring keeps the plan at or under its budget,
within one fill step. The fitted number is applied to the in-memory plan on
load (and after every edit), never written back to the file.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

from growcockpit.plan.cost import estimate_cost
from growcockpit.plan.errors import PlanError
from growcockpit.plan.types import Plan

MAX_FITTED_STEPS = 10**12  # the stage steps ceiling of plan/limits.py
_EPS = 1e-9  # float slack so an exact fit (e.g. 213.0 computed as 212.9999…) is not floored away


@dataclass(frozen=True)
class FittedBudget:
    """The budget, its fill stage and the fitted step count (cost units: cost.py)."""

    fill_index: int
    fill_name: str
    fitted_steps: int  # may be < 1: then the budget cannot be met (`problem`)
    budget_units: float
    baseline_steps: float  # the budget as steps of the full-depth baseline
    baseline_step_cost: float
    fixed_units: float  # every stage but the fill stage
    fill_step_cost: float
    minutes: float | None  # the budget as wall minutes, when unit_ms is known
    problem: str | None  # why the budget cannot be met; None when it can
    problem_key: str

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def total_units(self) -> float:
        """Estimated cost of the fitted plan."""
        return self.fixed_units + self.fill_step_cost * max(0, self.fitted_steps)


def fill_index(plan: Plan) -> int | None:
    """The stage whose steps are fitted: the first `fill = true`, else the last stage
    when the plan has a budget; None without a budget or stages."""
    if plan.budget is None or not plan.stages:
        return None
    marked = [i for i, s in enumerate(plan.stages) if s.fill]
    return marked[0] if marked else len(plan.stages) - 1


def budget_problems(plan: Plan) -> list[tuple[str, str]]:
    """(key, problem) pairs of the `[budget]` table and `fill` flags (validate uses them)."""
    problems: list[tuple[str, str]] = []
    marked = [i for i, s in enumerate(plan.stages) if s.fill]
    b = plan.budget
    if b is None:
        for i in marked:
            problems.append(
                (
                    f"stages[{i}].fill",
                    "fill fits this stage's steps to a [budget], but the plan has none; "
                    "add [budget] with baseline_steps = N (or minutes = M), or remove fill",
                )
            )
        return problems
    for i in marked[1:]:
        problems.append(
            (
                f"stages[{i}].fill",
                f'only one stage can fill the budget, but stages[{marked[0]}] "{plan.stages[marked[0]].name}" '
                "already does; remove fill here",
            )
        )
    given = [k for k in ("baseline_steps", "minutes") if getattr(b, k) is not None]
    if len(given) != 1:
        what = "both" if given else "neither"
        problems.append(
            (
                "budget",
                f"has {what} of baseline_steps and minutes; set exactly one, "
                "e.g. baseline_steps = 400",
            )
        )
        return problems
    if b.baseline_steps is not None and b.baseline_steps < 1:
        problems.append(
            (
                "budget.baseline_steps",
                f"must be ≥ 1, got {b.baseline_steps}; set a positive number of baseline steps",
            )
        )
    if b.minutes is not None:
        if not (b.minutes > 0 and math.isfinite(b.minutes)):
            problems.append(
                ("budget.minutes", f"must be > 0, got {b.minutes}; set a positive number")
            )
        if b.unit_ms is None:
            problems.append(
                (
                    "budget.minutes",
                    "needs unit_ms (the wall milliseconds of one cost unit on this machine); "
                    "run `growcockpit plan show PLAN --calibrate` and copy its unit_ms into [budget]",
                )
            )
    if b.unit_ms is not None and not (b.unit_ms > 0 and math.isfinite(b.unit_ms)):
        problems.append(
            (
                "budget.unit_ms",
                f"must be > 0, got {b.unit_ms}; copy it from `plan show --calibrate`",
            )
        )
    return problems


def fit_budget(
    plan: Plan,
    *,
    r: float = 2.0,
    h: float | None = None,
    frozen_fwd: float = 1.0,
    unit_ms: float | None = None,
) -> FittedBudget | None:
    """The fit of `plan`'s budget (module doc); None when the plan has no budget
    or the budget table itself is invalid (see `budget_problems`).

    `r`, `h`, `frozen_fwd` are the cost model's (`estimate_cost`); `unit_ms`
    overrides `[budget] unit_ms`. Pure: `plan` is not modified.
    """
    index = fill_index(plan)
    b = plan.budget
    if index is None or b is None or budget_problems(plan):
        return None
    cost = estimate_cost(plan, r=r, h=h, frozen_fwd=frozen_fwd)
    unit = unit_ms if unit_ms is not None else b.unit_ms
    base = cost.baseline_step_cost
    if b.baseline_steps is not None:
        units = b.baseline_steps * base
        key = "budget.baseline_steps"
    else:
        assert b.minutes is not None and unit is not None  # budget_problems checked
        units = b.minutes * 60_000.0 / unit
        key = "budget.minutes"
    fill_cost = cost.stages[index].step_cost
    fixed = sum(s.total for i, s in enumerate(cost.stages) if i != index) + cost.stages[index].probe
    raw = (units - fixed) / fill_cost if fill_cost > 0 else 0.0
    name = plan.stages[index].name
    problem = None
    if not math.isfinite(raw) or raw > MAX_FITTED_STEPS:
        steps = 0
        problem = (
            f'is too large: the fill stage "{name}" would need more than '
            f"{MAX_FITTED_STEPS:,} steps; set a smaller budget"
        )
    else:
        steps = math.floor(raw + _EPS)
    if problem is None and steps < 1:
        fixed_stages = ", ".join(
            f'"{s.name}" ({s.total / base:.1f})' if base > 0 else f'"{s.name}"'
            for i, s in enumerate(cost.stages)
            if i != index
        )
        need = fixed + fill_cost
        short = need - units
        in_steps = f"{short / base:.1f} baseline steps" if base > 0 else f"{short:.1f} units"
        problem = (
            f"cannot be met: the fixed stages {fixed_stages or '(none)'} cost "
            f"{fixed / base if base > 0 else fixed:.1f} baseline steps and fill stage "
            f'"{name}" needs at least one step, {in_steps} more than the budget; '
            f"raise the budget to ≥ {math.ceil(need / base - _EPS) if base > 0 else need:g} baseline steps "
            "or shorten those stages"
        )
    return FittedBudget(
        fill_index=index,
        fill_name=name,
        fitted_steps=steps,
        budget_units=units,
        baseline_steps=units / base if base > 0 else 0.0,
        baseline_step_cost=base,
        fixed_units=fixed,
        fill_step_cost=fill_cost,
        minutes=units * unit / 60_000.0 if unit is not None else None,
        problem=problem,
        problem_key=key,
    )


def apply_fit(plan: Plan, fit: FittedBudget | None) -> None:
    """Write a fit's steps into `plan`'s fill stage (in place; 0 when it cannot be met)."""
    if fit is not None:
        plan.stages[fit.fill_index].steps = max(0, fit.fitted_steps)


def fitted_plan(
    plan: Plan,
    *,
    r: float = 2.0,
    h: float | None = None,
    frozen_fwd: float = 1.0,
    unit_ms: float | None = None,
) -> Plan:
    """A copy of `plan` with the fill stage's steps fitted to its budget.

    Raises `PlanError` when the budget cannot be met (or is invalid); a plan
    without a budget comes back as an unchanged copy. The keyword arguments
    are `fit_budget`'s.
    """
    out = copy.deepcopy(plan)
    problems = budget_problems(out)
    if problems:
        key, problem = problems[0]
        raise PlanError(problem, key=key)
    fit = fit_budget(out, r=r, h=h, frozen_fwd=frozen_fwd, unit_ms=unit_ms)
    if fit is not None and fit.problem is not None:
        raise PlanError(fit.problem, key=fit.problem_key)
    apply_fit(out, fit)
    return out
