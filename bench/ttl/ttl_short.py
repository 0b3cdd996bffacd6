"""The full-depth short-schedule controls of bench/time_to_loss.py: which run by default.

`full@0.5` and `full@0.25` (bench/ttl/ttl_plans.py `full_at_plan`) and `full@plan`, the
full model at the cheapest growth plan's estimated FLOPs. Together with the long
baseline they make the full model's envelope (growcockpit/compare/envelope.py), which a
growth method must beat for its speedup to be claimed (bench/ttl/ttl_claims.py).
"""

from __future__ import annotations

import argparse

from common import Size
from ttl_claims import short_control_methods
from ttl_plans import Budget, MethodError, budget_plan

from growcockpit.plan import estimate_cost
from growcockpit.plan.types import Plan


def first_seed(args: argparse.Namespace) -> int:
    return int(args.seeds.split(",")[0])


def short_schedule(args: argparse.Namespace) -> str:
    """The schedule family the short controls complete: the baseline's (WSD when the
    baseline trains with it)."""
    return "wsd" if "wsd" in args.baseline_schedules.split(",") else "linear"


def short_controls(
    done: list[tuple[str, Plan]], size: Size, seed: int, budget: Budget, schedule: str, say: bool
) -> list[tuple[str, Plan]]:
    """full@0.5, full@0.25 and full@plan (the cheapest growth plan's estimated FLOPs as a
    share of the budget; in budget mode every plan is fitted to the budget, so it is the
    baseline itself and not run again), each skipped with a line when it leaves no
    evaluation."""
    have = {label for label, _ in done}
    unit = estimate_cost(budget_plan("baseline", size, seed, budget)).baseline_step_cost
    growth = [
        estimate_cost(plan).total / (unit * size.steps)
        for label, plan in done
        if not label.startswith(("baseline", "depth-", "full@"))
    ]
    wanted = short_control_methods()
    at_plan = round(min(growth), 2) if growth else None
    if at_plan is not None and at_plan < 0.95:
        wanted.append(f"full@{at_plan:g}")
        if say:
            print(f"full@plan = full@{at_plan:g}: the cheapest growth plan's estimated FLOPs")
    elif say and at_plan is not None:
        print("full@plan: every growth plan is fitted to the budget; the baseline is that control")
    out = []
    for m in dict.fromkeys(wanted):
        if m in have:
            continue
        try:
            out.append((m, budget_plan(m, size, seed, budget, schedule)))
        except MethodError as exc:
            if say:
                print(f"time_to_loss: short control left out: {exc}")
    return out
