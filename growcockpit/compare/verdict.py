"""The verdict of a comparison: how much sooner each run reaches the target run's final loss.

The target is one run's final validation loss (typically the full-depth baseline's).
For every run: the training time and estimated FLOPs at which its validation loss
first reached the target (interpolated between evaluations), and the speedups
over the target run, which is measured the same way (it may have reached its own
final loss before its last evaluation). A run that has not reached it gets a
projection from the slope of its last evaluations, in steps — a hint, since
loss curves flatten.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from growcockpit.compare.comparable import mismatches, not_comparable
from growcockpit.compare.progress import EvalPoint, RunProgress

SLOPE_EVALS = 4  # evaluations the "at the current slope" projection fits


@dataclass(frozen=True)
class Reach:
    """Where a curve first reached a loss (interpolated)."""

    step: float
    wall_s: float
    flops: float | None


@dataclass(frozen=True)
class Verdict:
    run: str
    target_run: str
    target_loss: float | None
    final_val_loss: float | None
    reach: Reach | None
    speedup_wall: float | None
    speedup_flops: float | None
    more_steps: int | None  # projected steps still needed (not reached, loss falling)
    text: str
    mismatches: tuple[str, ...] = ()  # why the run measures another loss (compare/comparable.py)


def first_reach(points: list[EvalPoint], target: float) -> Reach | None:
    """The first point where the val loss is ≤ `target`, interpolated from the one before."""
    prev: EvalPoint | None = None
    for p in points:
        if p.val_loss <= target:
            if prev is None or prev.val_loss == p.val_loss:
                return Reach(float(p.step), p.wall_s, p.flops)
            f = (prev.val_loss - target) / (prev.val_loss - p.val_loss)
            flops = None
            if p.flops is not None and prev.flops is not None:
                flops = prev.flops + f * (p.flops - prev.flops)
            return Reach(
                prev.step + f * (p.step - prev.step),
                prev.wall_s + f * (p.wall_s - prev.wall_s),
                flops,
            )
        prev = p
    return None


def slope_per_step(points: list[EvalPoint], n: int = SLOPE_EVALS) -> float | None:
    """Least-squares slope of val loss per step over the last `n` evaluations."""
    pts = points[-n:]
    if len(pts) < 2:
        return None
    xs = [float(p.step) for p in pts]
    ys = [p.val_loss for p in pts]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    if var == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var


def _times(speedup: float) -> str:
    return f"{speedup:.1f}× sooner" if speedup >= 1 else f"{1 / speedup:.1f}× later"


def _verdict(
    run: RunProgress,
    target: RunProgress,
    text: str,
    reach: Reach | None = None,
    wall: float | None = None,
    flops: float | None = None,
    more: int | None = None,
) -> Verdict:
    return Verdict(
        run.name,
        target.name,
        target.final_val_loss,
        run.final_val_loss,
        reach,
        wall,
        flops,
        more,
        text,
    )


def verdict(run: RunProgress, target: RunProgress) -> Verdict:
    """The verdict of `run` against `target`'s final validation loss (module doc)."""
    goal = target.final_val_loss
    final = run.final_val_loss
    if goal is None:
        return _verdict(run, target, f"{target.name} has no evaluation yet: no target")
    found = (
        []
        if run is target
        else mismatches(run.plan, target.plan, run.data_source, target.data_source)
    )
    if found:
        text = not_comparable(found, target.name)
        return dataclasses.replace(
            _verdict(run, target, text), mismatches=tuple(m.text for m in found)
        )
    if final is None:
        return _verdict(run, target, "no evaluation yet")
    own = first_reach(target.evals, goal)
    reach = first_reach(run.evals, goal)
    if run is target:
        return _verdict(run, target, f"the target: final loss {goal:.3f}", reach, 1.0, 1.0)
    if reach is not None and own is not None:
        wall = own.wall_s / reach.wall_s if reach.wall_s > 0 else None
        flops = own.flops / reach.flops if own.flops is not None and reach.flops else None
        text = f"reaches {target.name}'s final loss"
        if wall is not None:
            text += f" {_times(wall)} (wall)"
        if flops is not None:
            same_way = wall is not None and (wall >= 1) == (flops >= 1)  # "sooner" said once
            text += f", {flops:.1f}× (FLOPs)" if same_way else f", {_times(flops)} (FLOPs)"
        return _verdict(run, target, text, reach, wall, flops)
    slope = slope_per_step(run.evals)
    behind = f"not reached ({final:.3f} vs {goal:.3f})"
    if slope is None or slope >= 0 or not math.isfinite(slope):
        return _verdict(run, target, f"{behind}; the loss is not falling")
    more = math.ceil((final - goal) / -slope - 1e-9)
    return _verdict(
        run, target, f"{behind}; at the current slope about {more} more steps", more=more
    )


def verdicts(runs: list[RunProgress], target: RunProgress) -> list[Verdict]:
    return [verdict(r, target) for r in runs]
