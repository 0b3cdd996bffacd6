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
    """One family at one measured fraction of the budget, over its seeds."""

    family: str
    fraction: float
    races: int  # one per seed
    winner_rate: float  # the race's winner was the true winner
    kendall: float  # mean Kendall τ-b, early order against final order
    spearman: float  # mean Spearman ρ
    regret: float  # mean final-loss gap between the true winner and the race's


SCALE = (
    "(GPT-2: 6 candidates, Llama: 3; the shipped CPU recipes at 0.2× their steps, batch "
    "8 × 64, 5 seeds; bench/results/race_trust.md)"
)
MEASURED: tuple[Trust, ...] = (
    Trust("gpt2", 0.05, 5, 1.00, 0.31, 0.34, 0.000),
    Trust("gpt2", 0.1, 5, 1.00, 0.33, 0.36, 0.000),
    Trust("gpt2", 0.25, 5, 1.00, 0.65, 0.76, 0.000),
    Trust("gpt2", 0.5, 5, 1.00, 0.87, 0.93, 0.000),
    Trust("llama", 0.05, 5, 1.00, 1.00, 1.00, 0.000),
    Trust("llama", 0.1, 5, 1.00, 1.00, 1.00, 0.000),
    Trust("llama", 0.25, 5, 1.00, 1.00, 1.00, 0.000),
    Trust("llama", 0.5, 5, 1.00, 1.00, 1.00, 0.000),
)


def safe_fraction(
    table: Sequence[Trust], rate: float = SAFE_RATE, tau: float = SAFE_TAU
) -> float | None:
    """The smallest measured fraction at which every family reaches `rate` and `tau` (and
    does at every larger fraction measured); None when some family never does."""
    fractions = sorted({t.fraction for t in table})
    ok = {f: all(t.winner_rate >= rate and t.kendall >= tau for t in table if t.fraction == f)
          for f in fractions}  # fmt: skip
    safe = [f for i, f in enumerate(fractions) if all(ok[g] for g in fractions[i:])]
    return safe[0] if safe else None


SAFE_FRACTION: float | None = safe_fraction(MEASURED)


def nearest(table: Sequence[Trust], fraction: float) -> list[Trust]:
    """The measured rows (one per family) at the fraction at or just below `fraction`
    (the smallest measured one when `fraction` is below them all)."""
    fractions = sorted({t.fraction for t in table})
    if not fractions:
        return []
    below = [f for f in fractions if f <= fraction + 1e-12]
    at = below[-1] if below else fractions[0]
    return [t for t in table if t.fraction == at]


def caveat(
    fraction: float, table: Sequence[Trust] = MEASURED, safe: float | None = SAFE_FRACTION
) -> str | None:
    """The line a race picking at `fraction` prints: None at or above the safe point."""
    if not table or (safe is not None and fraction >= safe - 1e-12):
        return None
    rows = nearest(table, fraction)
    races = sum(t.races for t in rows)
    right = sum(t.winner_rate * t.races for t in rows) / races
    where = (
        f"below the measured safe point {safe:g}"
        if safe is not None
        else f"and no measured fraction up to {max(t.fraction for t in table):g} was safe"
    )
    taus = ", ".join(f"{t.family} {t.kendall:.2f}" for t in rows)
    at = f"{rows[0].fraction:.0%}" + (
        " (the least measured)" if fraction < rows[0].fraction else ""
    )
    return (
        f"caveat: --budget-fraction {fraction:g} {where}: picking at {at} of the budget, a "
        f"race picked the true winner in {right:.0%} of {races} measured races; its order "
        f"there against the final one: Kendall τ {taus} (safe: the right winner in "
        f"{SAFE_RATE:.0%} and τ ≥ {SAFE_TAU:g} in every family) {SCALE}"
    )
