"""How far a short race can be trusted: the measured agreement between a race's pick and
the true winner, and the caveat the race prints when it picks below the safe point.

A race cuts on validation loss at a fraction of the budget; growth plans are cheap and
shallow early and deep late, so their early order need not be their final order. The
table below was measured by training every candidate of a race to its full budget and
replaying the race on the curves (bench/race_trust.py; bench/results/race_trust.md has
the scale, per-family numbers and the raw JSON):

    nice -n 5 python bench/race_trust.py --seeds 0,1,2,3,4 --scale 0.2 --batch 8 \\
        --seq 64 --evals 20 --parallel 2 --json bench/results/race_trust-cpu-2026-12-01.json

The safe point is the smallest measured fraction at which the race picked the true
winner (the lowest final loss of the same seed) in at least SAFE_RATE of the races and
the order there was mostly the final one (mean Kendall τ at least SAFE_TAU: 80 % of the
pairs in their final order), so that the runners-up a `--keep` continues are right too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SAFE_RATE = 0.8
SAFE_TAU = 0.6


@dataclass(frozen=True)
class Trust:
    """One measured fraction of the budget, pooled over families and seeds."""

    fraction: float
    races: int
    winner_rate: float  # the race's winner was the true winner
    kendall: float  # mean Kendall τ-b, early order against final order
    spearman: float  # mean Spearman ρ
    regret: float  # mean final-loss gap between the true winner and the race's


SCALE = "(measured on the shipped GPT-2 and Llama CPU recipes at 0.2× their steps, 5 seeds)"
MEASURED: tuple[Trust, ...] = ()
SAFE_FRACTION: float | None = None


def safe_fraction(
    table: Sequence[Trust], rate: float = SAFE_RATE, tau: float = SAFE_TAU
) -> float | None:
    """The smallest measured fraction whose winner rate and mean τ reach `rate` and `tau`."""
    good = [t.fraction for t in table if t.winner_rate >= rate and t.kendall >= tau]
    return min(good) if good else None


def nearest(table: Sequence[Trust], fraction: float) -> Trust | None:
    """The measured row at or just below `fraction` (the smallest row below them all)."""
    rows = sorted(table, key=lambda t: t.fraction)
    below = [t for t in rows if t.fraction <= fraction + 1e-12]
    return below[-1] if below else (rows[0] if rows else None)


def caveat(
    fraction: float, table: Sequence[Trust] = MEASURED, safe: float | None = SAFE_FRACTION
) -> str | None:
    """The line a race picking at `fraction` prints: None at or above the safe point."""
    if not table or (safe is not None and fraction >= safe - 1e-12):
        return None
    row = nearest(table, fraction)
    assert row is not None
    where = (
        f"below the measured safe point {safe:g}"
        if safe is not None
        else f"and no measured fraction up to {max(t.fraction for t in table):g} was safe"
    )
    return (
        f"caveat: --budget-fraction {fraction:g} {where}: picking at {row.fraction:.0%} of "
        f"the budget, a race picked the true winner in {row.winner_rate:.0%} of "
        f"{row.races} measured races (Kendall τ {row.kendall:.2f} between that order and "
        f"the final one) {SCALE}"
    )
