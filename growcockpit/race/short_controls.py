"""The full model on shorter schedules in a race, and the claim over the race's result.

Why: a growth winner that reaches the baseline's loss sooner than the long baseline's
curve may still lose to the same full-depth model simply trained for fewer steps with its
schedule completed (its warm-up kept, a WSD decay at its own end). So a race adds, by
default, the baseline's model at ½ and ¼ of the baseline's steps (`full@0.5`,
`full@0.25`) as ordinary candidates; at the end the winner's speedup is claimed only
where it beats their envelope and every fixed smaller model on every seed
(compare/claim.py `growth_claim`, the one rule every surface applies).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from growcockpit.compare import load_progress
from growcockpit.compare.claim import GrowthClaim, SeedCosts, growth_claim
from growcockpit.compare.depth_gate import DepthGate
from growcockpit.compare.envelope import (
    SHORT_FRACTIONS,
    Cost,
    CurvePoint,
    Metric,
    Target,
    cost_to,
    envelope,
)
from growcockpit.plan import Plan, fitted_plan
from growcockpit.protocol.safe_fs import RunDirError
from growcockpit.race.halving import Point
from growcockpit.race.runs import run_state

SHORT_STAGE = "full-depth-short"


def short_name(fraction: float) -> str:
    return f"full@{fraction:g}"


def short_control_tables(base: dict[str, Any], plan: Plan, fraction: float) -> dict[str, Any]:
    """The baseline's tables (`base`, whose plan is `plan`) on `fraction` of its steps: one
    full-depth stage, no [budget], the same optimizer (its schedule and warm-up) over the
    shorter total, so the schedule completes at its own end."""
    full = fitted_plan(plan) if plan.budget is not None else plan
    steps = max(1, math.floor(full.total_steps * fraction))
    out = {k: v for k, v in base.items() if k not in ("stages", "budget")}
    out["name"] = f"{plan.name}-full-{fraction:g}"
    stage = {**dict(base["stages"][0]), "name": SHORT_STAGE, "steps": steps}
    stage.pop("fill", None)
    optim = dict(out.get("optim") or {})
    warmup = optim.get("warmup_steps", plan.optim.warmup_steps)
    if isinstance(warmup, int) and warmup >= steps:
        optim["warmup_steps"] = max(0, steps // 2)  # a warm-up longer than the run never peaks
        out["optim"] = optim
    out["stages"] = [stage]
    return out


def short_fractions() -> tuple[float, ...]:
    return SHORT_FRACTIONS


def _curve(points: Sequence[Point]) -> list[CurvePoint]:
    return [CurvePoint(p.flops, None, p.loss) for p in sorted(points, key=lambda q: q.flops)]


def _curve_of(run: str, metric: Metric) -> list[CurvePoint]:
    """A run's `metric` against FLOPs (read only where run_state finds a safe event log)."""
    state = run_state(Path(run))
    if metric == "val_loss" or state.status == "missing":
        return _curve(state.points)
    try:
        evals = load_progress(Path(run)).evals
    except (OSError, RunDirError, ValueError):
        return []
    return [
        CurvePoint(e.flops, None, e.accuracy)
        for e in evals
        if e.accuracy is not None and e.flops is not None
    ]


def race_claim(
    winner_runs: Sequence[str],
    full_runs: Mapping[str, Sequence[str]],
    fixed_runs: Mapping[str, Sequence[str]],
    target_loss: float,
    gate: DepthGate | None,
    missing: Sequence[str] = (),
    seed_ids: Sequence[int] = (),
    metric: Metric = "val_loss",
    value: float | None = None,
) -> GrowthClaim:
    """The winner's claim against the baseline's and the short controls' runs (`full_runs`,
    name → a run directory per seed) and the fixed-size controls' (`fixed_runs`), each
    seed against the runs of its own seed, on FLOPs (a race does not time its steps).
    `metric`/`value`: an accuracy target (default: the first full run's final accuracy)
    instead of `target_loss`."""
    target = Target("val_loss", target_loss)
    if metric == "accuracy":
        first = next((r[0] for r in full_runs.values() if r), None)
        last = _curve_of(first, metric) if first is not None else []
        goal = value if value is not None else (last[-1].value if last else math.nan)
        target = Target("accuracy", goal)
    elif value is not None:
        target = Target("val_loss", value)
    seeds: list[SeedCosts] = []
    for i, run in enumerate(winner_runs):
        curves = {n: _curve_of(r[i], metric) for n, r in full_runs.items() if i < len(r)}
        fixed: dict[str, Cost | None] = {
            n: cost_to(_curve_of(r[i], metric), target) for n, r in fixed_runs.items() if i < len(r)
        }
        grown = cost_to(_curve_of(run, metric), target)
        seed = seed_ids[i] if i < len(seed_ids) else i
        seeds.append(SeedCosts(seed, grown, envelope(curves, target), fixed))
    return growth_claim(seeds, target, gate, missing)
