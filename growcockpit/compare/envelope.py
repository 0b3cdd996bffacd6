"""The full model's best cost to a target: the lower envelope over its schedules.

Why: "growth reaches the baseline's final loss N× sooner" reads a point off the long
baseline's curve, whose LR has not decayed yet. The same full-depth model trained for
fewer steps with its own schedule completed (warm-up kept, a WSD decay at its own end)
often reaches that loss much sooner. So the cost the full model needs to reach a target
is the least over the long baseline and every short-schedule run of it (`full@0.5`,
`full@0.25`, `full@plan`): the envelope. Growth is measured against that, not one curve.

The target may be a loss (lower is better) or an exact-match accuracy (higher is
better): every function here takes the metric, so "time to 95 % accuracy" and "time to
the baseline's final loss" are one computation. Pure Python: the bench, `compare`, the
race and the pin call it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Metric = Literal["val_loss", "accuracy"]
METRICS: tuple[Metric, ...] = ("val_loss", "accuracy")
Axis = Literal["flops", "wall_s"]

# a full-depth short-schedule control: `full@0.5` (a fraction of the baseline's budget) or
# `full@plan` (the growth plan's own estimated FLOPs)
SHORT_CONTROL = re.compile(r"^full@(plan|\d*\.?\d+)$")
SHORT_FRACTIONS = (0.5, 0.25)  # the default short schedules, beside `full@plan`


def higher_is_better(metric: Metric) -> bool:
    """Accuracy rises as a model learns; a loss falls."""
    return metric == "accuracy"


def metric_of(name: str) -> Metric:
    """`name` as a Metric (ValueError naming the choices otherwise)."""
    for m in METRICS:
        if name == m:
            return m
    raise ValueError(f"unknown metric {name!r}; one of {', '.join(METRICS)}")


@dataclass(frozen=True)
class Target:
    """A value of a metric to reach: a loss at or below it, an accuracy at or above it."""

    metric: Metric
    value: float

    def met(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        return value >= self.value if higher_is_better(self.metric) else value <= self.value

    @property
    def text(self) -> str:
        if self.metric == "accuracy":
            return f"{100 * self.value:.4g} % accuracy"
        return f"val loss {self.value:.3f}"


@dataclass(frozen=True)
class CurvePoint:
    """One evaluation: the compute spent so far and the metric's value there."""

    flops: float | None
    wall_s: float | None  # None: not measured (a race's curves count FLOPs only)
    value: float


@dataclass(frozen=True)
class Cost:
    """Where a curve first met the target (interpolated between evaluations)."""

    flops: float | None
    wall_s: float | None

    def on(self, axis: Axis) -> float | None:
        return self.flops if axis == "flops" else self.wall_s


def _lerp(a: float | None, b: float | None, f: float) -> float | None:
    return None if a is None or b is None else a + f * (b - a)


def cost_to(points: Sequence[CurvePoint], target: Target) -> Cost | None:
    """The first point meeting `target`, interpolated from the one before (None: never)."""
    prev: CurvePoint | None = None
    for p in points:
        if target.met(p.value):
            if prev is None or prev.value == p.value or not math.isfinite(prev.value):
                return Cost(p.flops, p.wall_s)
            f = (prev.value - target.value) / (prev.value - p.value)
            return Cost(_lerp(prev.flops, p.flops, f), _lerp(prev.wall_s, p.wall_s, f))
        prev = p
    return None


@dataclass(frozen=True)
class Envelope:
    """The full model's least cost to the target on each axis, and which run gave it.
    `flops_by`/`wall_by` are run names (e.g. "baseline", "full@0.5"); None: no run of the
    full model reached the target."""

    target: Target
    flops: float | None
    flops_by: str | None
    wall_s: float | None
    wall_by: str | None

    def on(self, axis: Axis) -> tuple[float | None, str | None]:
        return (self.flops, self.flops_by) if axis == "flops" else (self.wall_s, self.wall_by)


def envelope(curves: Mapping[str, Sequence[CurvePoint]], target: Target) -> Envelope:
    """The lower envelope over the full model's curves (module doc): per axis the least
    cost at which any of them met `target`; ties go to the first named."""
    best: dict[Axis, tuple[float, str] | None] = {"flops": None, "wall_s": None}
    for name, points in curves.items():
        reach = cost_to(points, target)
        if reach is None:
            continue
        axes: tuple[Axis, ...] = ("flops", "wall_s")
        for axis in axes:
            x = reach.on(axis)
            have = best[axis]
            if x is not None and (have is None or x < have[0]):
                best[axis] = (x, name)
    f, w = best["flops"], best["wall_s"]
    return Envelope(
        target,
        None if f is None else f[0],
        None if f is None else f[1],
        None if w is None else w[0],
        None if w is None else w[1],
    )


def is_short_control(name: str) -> bool:
    return bool(SHORT_CONTROL.match(name))


def control_words(name: str) -> str:
    """A run name said so a user understands what it is."""
    m = SHORT_CONTROL.match(name.split(" ")[0])
    if m is None:
        depth = re.match(r"^depth-(\d+)(?:\s|$)", name)
        if depth:
            n = int(depth.group(1))
            return f"a fixed {n}-layer model ({name})"
        if name.startswith("baseline"):
            return f"the full model on the long schedule ({name})"
        return name
    what = m.group(1)
    if what == "plan":
        return f"the full model trained for the growth plan's own FLOPs ({name})"
    frac = float(what)
    part = {0.5: "half", 0.25: "a quarter of", 0.75: "three quarters of"}.get(frac, f"{frac:g}×")
    return f"the full model trained for {part} the budget ({name})"


def points(evals: Sequence[object], metric: Metric) -> list[CurvePoint]:
    """A run's evaluations as a curve of `metric`: `EvalPoint`s (compare/progress.py) or
    the bench's stored dicts ({"wall_s", "flops", "val_loss", "accuracy"}); evaluations
    without the metric are left out."""
    out = []
    for e in evals:
        if isinstance(e, Mapping):
            value, flops, wall = e.get(metric), e.get("flops"), e.get("wall_s", 0.0)
        else:
            value = getattr(e, metric, None)
            flops, wall = getattr(e, "flops", None), getattr(e, "wall_s", 0.0)
        if isinstance(value, int | float) and math.isfinite(value):
            fl = None if flops is None else float(flops)
            out.append(CurvePoint(fl, None if wall is None else float(wall), value))
    return out
