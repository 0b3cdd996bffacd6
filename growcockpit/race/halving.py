"""Successive halving at equal compute: the race's pure decisions, no I/O.

A race compares candidates at *rungs*: fixed amounts of compute (FLOPs of the plan's
cost model), the last one at `budget_fraction` of the full budget and each earlier
one 1/eta of the next. At every rung all candidates still in the race are measured at
exactly that compute (their validation loss interpolated between the evaluations
around it), and the best 1/eta go on, never fewer than `keep`. The halving is
synchronous on purpose: Optuna's SuccessiveHalvingPruner is asynchronous (ASHA),
where a trial is judged against whichever trials happened to report first, so a
race run one candidate at a time would never cut its first candidate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from growcockpit.compare.progress import EvalPoint
from growcockpit.compare.verdict import first_reach


@dataclass(frozen=True)
class Point:
    """One evaluation of a run: cumulative FLOPs and the validation loss there."""

    flops: float
    loss: float


def survivors_after(count: int, eta: int, keep: int) -> int:
    """How many of `count` candidates go on from a rung: count // eta, at least `keep`."""
    return max(keep, count // eta)


def rung_counts(candidates: int, eta: int, keep: int) -> list[int]:
    """Candidates measured at each rung: [8, 4, 2] for 8 candidates, eta 2, keep 1.
    The race has a rung while more than `keep` candidates are left."""
    if eta < 2 or keep < 1:
        raise ValueError("eta must be ≥ 2 and keep ≥ 1")
    counts: list[int] = []
    left = candidates
    while left > keep:
        counts.append(left)
        left = survivors_after(left, eta, keep)
    return counts


def rung_computes(candidates: int, eta: int, keep: int, top: float) -> list[float]:
    """The compute of each rung: the last at `top`, each earlier one `top / eta**k`."""
    n = len(rung_counts(candidates, eta, keep))
    return [top / eta ** (n - 1 - r) for r in range(n)]


def _order_key(item: tuple[str, float | None]) -> tuple[float, str]:
    key, value = item
    bad = value is None or math.isnan(value)
    return (math.inf if bad else float(value or 0.0), key)


def ranked(values: Mapping[str, float | None]) -> list[str]:
    """Candidates best first (lowest loss); a missing or NaN value (a crashed run) ranks
    last; ties go to the key, so every worker ranks the same stored values the same way."""
    return [key for key, _ in sorted(values.items(), key=_order_key)]


def tied(a: float | None, b: float | None) -> bool:
    """Identical scores (to float noise): no measurement tells the two apart."""
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return False
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)


def cut(values: Mapping[str, float | None], eta: int, keep: int) -> list[str]:
    """The candidates that go on from a rung where `values` were measured, best first.

    A tie at the boundary is kept whole: a candidate whose score equals the last
    survivor's goes on too (the next rung, or the full budget, tells them apart), never
    cut by its name's place in the order."""
    order = ranked(values)
    n = survivors_after(len(values), eta, keep)
    while n < len(order) and tied(values[order[n - 1]], values[order[n]]):
        n += 1
    return order[:n]


def best_tied(values: Mapping[str, float | None]) -> list[str]:
    """The candidates that share the best score (one, unless the best is a tie)."""
    order = ranked(values)
    if not order:
        return []
    return [k for k in order if k == order[0] or tied(values[order[0]], values[k])]


def value_at(points: Sequence[Point], compute: float, *, finished: bool = False) -> float | None:
    """The validation loss at `compute`, interpolated linearly between the evaluations
    around it; None when the run has not been evaluated that far (unless `finished`:
    then its last evaluation, the most it will ever have). Before the first evaluation
    the first one stands in (the race then says so through the compute it reports)."""
    pts = sorted(points, key=lambda p: p.flops)
    if not pts:
        return None
    if compute <= pts[0].flops:
        return pts[0].loss
    for prev, p in zip(pts, pts[1:], strict=False):
        if prev.flops <= compute <= p.flops:
            if p.flops == prev.flops:
                return p.loss
            f = (compute - prev.flops) / (p.flops - prev.flops)
            return prev.loss + f * (p.loss - prev.loss)
    return pts[-1].loss if finished else None


def reached(points: Sequence[Point], compute: float) -> bool:
    """Has the run been evaluated at or past `compute` (so `value_at` is known)?"""
    return any(p.flops >= compute for p in points)


def first_reach_flops(points: Sequence[Point], target: float) -> float | None:
    """The compute at which the loss first fell to `target`: compare's crossing (the one
    every surface interpolates with) over the race's points; None if never."""
    evals = [EvalPoint(0, 0.0, p.flops, p.loss) for p in sorted(points, key=lambda q: q.flops)]
    reach = first_reach(evals, target)
    return None if reach is None else reach.flops


@dataclass(frozen=True)
class Speedup:
    """How much sooner the winner reached the baseline's loss, from the race's own curves."""

    target_loss: float
    baseline_flops: float  # where the baseline measured that loss
    winner_flops: float | None  # where the winner first reached it
    race_flops: float  # every candidate's compute in the race
    winner_race_flops: float  # the winner's own part of it

    @property
    def sooner(self) -> float | None:
        """Candidate against candidate: baseline compute / winner compute to the loss."""
        if self.winner_flops is None or self.winner_flops <= 0:
            return None
        return self.baseline_flops / self.winner_flops

    @property
    def with_race(self) -> float | None:
        """The same, with the race counted: the winner's way to the loss cost what the
        other candidates spent plus its own compute to reach it."""
        if self.winner_flops is None:
            return None
        paid = self.race_flops - self.winner_race_flops + self.winner_flops
        return self.baseline_flops / paid if paid > 0 else None
