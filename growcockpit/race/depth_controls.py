"""Fixed-size controls in a race, and the depth gate over its result.

Beside the full-depth baseline a race trains, by default, the final model at fewer
layers (depth 1 and half depth: compare/depth_gate.py `control_depths`), one stage, all
trained, for the same compute as the first plan, at every choice of the non-stage keys
the baseline gets (so each meets its best LR where the race varies it). They race as
ordinary candidates: a control that wins says that a fixed smaller model is the best
use of this budget. The gate compares the baseline with the controls at the furthest
rung where all of them were measured (each depth at its best choice), per seed, and a
growth winner's speedup is claimed only where depth pays.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from growcockpit.compare.depth_gate import (
    DepthArm,
    DepthGate,
    control_depths,
    depth_gate,
    layers_text,
)
from growcockpit.plan import Plan, PlanError, plan_from_dict
from growcockpit.race.halving import value_at
from growcockpit.race.runs import run_state

DEPTH_STAGE = "fixed-depth"


class DepthControlError(Exception):
    """A control that cannot be built: one line, why and what to do."""


def depth_control_tables(data: dict[str, Any], plan: Plan, depth: int) -> dict[str, Any]:
    """The first plan's model at `depth` layers as one all-trained stage (tables), with as
    many steps as cost what one step of the model at that depth costs into `budget_flops`
    (the caller fits them: `fit_steps`)."""
    out = {k: v for k, v in data.items() if k not in ("stages", "budget")}
    out["name"] = f"{plan.name}-depth-{depth}"
    out["model"] = {**dict(data.get("model") or {}), "final_layers": depth}
    stage = {"name": DEPTH_STAGE, "layers": depth, "enter": "init", "train": "all", "steps": 1}
    out["stages"] = [stage]
    return out


def fit_steps(tables: dict[str, Any], budget_flops: float, step_flops: float) -> dict[str, Any]:
    """`tables` with the steps that spend `budget_flops` at `step_flops` a step."""
    steps = max(1, math.floor(budget_flops / step_flops)) if step_flops > 0 else 1
    return {**tables, "stages": [{**tables["stages"][0], "steps": steps}]}


def depth_control_plans(
    data: dict[str, Any], plan: Plan, budget_flops: float, flops_of: Callable[[Plan], float]
) -> list[tuple[int, dict[str, Any]]]:
    """(depth, tables) of every default control of `plan`'s final model at equal compute;
    `flops_of(plan)` is the race's count of a plan's whole compute."""
    out = []
    for depth in control_depths(plan.model.final_layers):
        tables = depth_control_tables(data, plan, depth)
        try:
            one_step = flops_of(plan_from_dict(tables))
        except PlanError as exc:
            raise DepthControlError(f"the {depth}-layer control: {exc}") from None
        out.append((depth, fit_steps(tables, budget_flops, one_step)))
    return out


@dataclass(frozen=True)
class RaceGate:
    """The gate at `rung` (0-based); `keys` are the candidates of each depth's arm."""

    gate: DepthGate
    rung: int
    keys: dict[int, str]

    def lines(self) -> list[str]:
        best = self.gate.best_control
        if best is None:
            return [self.gate.text]
        return [
            f"fixed depth best at this budget: {layers_text(self.gate.lowest_layers)} "
            f"(the best control: {self.keys[best.layers]}, {best.median:.4f} at rung "
            f"{self.rung + 1})",
            self.gate.text,
        ]


def _per_seed(runs: list[str], compute: float) -> tuple[float, ...] | None:
    values = []
    for run in runs:
        state = run_state(Path(run))
        v = value_at(state.points, compute, finished=state.completed)
        if v is None or not math.isfinite(v):
            return None
        values.append(v)
    return tuple(values)


Arm = tuple[str, list[str], list[float | None]]  # a candidate: key, run dirs, rung losses
SeedValues = Callable[[list[str], float], tuple[float, ...] | None]


def race_gate(
    rungs: list[float], arms: dict[int, list[Arm]], per_seed: SeedValues = _per_seed
) -> RaceGate | None:
    """The gate over `arms` (depth → its candidates, one per choice of the other keys) at
    the furthest rung where every depth was measured, each depth at its best candidate
    there, its seeds' losses read by `per_seed(runs, compute)`; the deepest depth is the
    baseline. None until every depth was measured at one rung."""
    if len(arms) < 2:
        return None
    full = max(arms)
    common = [
        r
        for r in range(len(rungs))
        if all(any(c[2][r] is not None for c in choices) for choices in arms.values())
    ]
    if not common:
        return None
    rung = common[-1]
    picked: dict[int, DepthArm] = {}
    keys: dict[int, str] = {}
    for depth, choices in arms.items():
        measured = [c for c in choices if c[2][rung] is not None]
        key, runs, _ = min(measured, key=lambda c: c[2][rung] or math.inf)
        seeds = per_seed(runs, rungs[rung])
        if seeds is None:
            return None
        picked[depth], keys[depth] = DepthArm(depth, seeds), key
    controls = [a for d, a in sorted(picked.items()) if d != full]
    return RaceGate(depth_gate(picked[full], controls), rung, keys)
