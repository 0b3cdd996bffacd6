"""Is growth ahead over the seeds? A one-sided paired test of log cost ratios.

Why a t-test, and why computed here: per seed the ratio r = (the strongest control's
cost to the target) / (growth's cost) is paired (same seed, same data order), and log r
is roughly symmetric, so the one-sample t-test of mean(log r) > 0 is the standard
paired test. A sign test would need 5 seeds to reach p < 0.05 at all (0.5⁵ = 0.031);
with the 3 seeds a CPU allows, only a t-test can say anything. The project has no
scipy, and for an integer number of degrees of freedom the t distribution's CDF has an
exact finite form (Abramowitz & Stegun 26.7.3-4), so the p-value is computed exactly
in a few lines rather than approximated.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

ALPHA = 0.05  # the one-sided level a claim needs
MIN_SEEDS = 3  # below this no test is made and the verdict says so


def t_two_sided_inside(t: float, df: int) -> float:
    """A(t | df) = P(|T| < t) for Student's t with integer `df` ≥ 1, t ≥ 0, exactly."""
    if df < 1:
        raise ValueError("degrees of freedom must be ≥ 1")
    if math.isinf(t):
        return 1.0
    theta = math.atan(t / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    if df % 2 == 1:
        total, term = 0.0, c
        if df > 1:
            total = term
            for k in range(3, df - 1, 2):  # coefficients 2·4…(k−1) / 1·3…k
                term *= (k - 1) / k * c * c
                total += term
        return (2 / math.pi) * (theta + s * total)
    total, term = 1.0, 1.0
    for k in range(2, df - 1, 2):  # coefficients 1·3…(k−1) / 2·4…k
        term *= (k - 1) / k * c * c
        total += term
    return s * total


def t_upper_tail(t: float, df: int) -> float:
    """P(T ≥ t) for Student's t with integer `df`."""
    inside = min(1.0, max(0.0, t_two_sided_inside(abs(t), df)))  # rounding past 1
    return (1 - inside) / 2 if t >= 0 else (1 + inside) / 2


@dataclass(frozen=True)
class SeedTest:
    """Per-seed speedups and the one-sided test that growth is ahead (mean log ratio > 0).
    `p` is None below MIN_SEEDS seeds; a seed growth never reached the target on counts
    as ratio 0 (so it is behind)."""

    ratios: tuple[float, ...]
    p: float | None

    @property
    def seeds(self) -> int:
        return len(self.ratios)

    @property
    def significant(self) -> bool:
        return self.p is not None and self.p < ALPHA

    @property
    def spread(self) -> tuple[float, float, float]:
        """median, min, max of the ratios."""
        return statistics.median(self.ratios), min(self.ratios), max(self.ratios)

    @property
    def text(self) -> str:
        n = self.seeds
        if n == 0:
            return "no seed"
        if n == 1:
            return "one seed: not a result"
        med, lo, hi = self.spread
        spread = f"median {med:.2f}× (min {lo:.2f}×, max {hi:.2f}×)"
        if self.p is None:
            return f"{n} seeds, {spread}: too few seeds for a test (≥ {MIN_SEEDS})"
        verdict = "ahead" if self.significant else "not shown to be ahead"
        return f"{n} seeds, {spread}; one-sided paired t-test p = {self.p:.3g}: {verdict}"


def seed_test(ratios: Sequence[float]) -> SeedTest:
    """The test of the module doc over per-seed speedups (control's cost / growth's)."""
    rs = tuple(float(r) for r in ratios)
    if len(rs) < MIN_SEEDS:
        return SeedTest(rs, None)
    if any(not r > 0 for r in rs):  # a seed that never reached: growth is not ahead there
        return SeedTest(rs, 1.0)
    logs = [math.log(r) for r in rs]
    if any(math.isinf(x) for x in logs):
        finite = [x for x in logs if math.isfinite(x)]
        return SeedTest(rs, 0.0 if not finite or min(logs) > 0 else 1.0)
    mean = statistics.fmean(logs)
    sd = statistics.stdev(logs)
    if sd == 0:
        return SeedTest(rs, 0.0 if mean > 0 else 1.0)
    t = mean / (sd / math.sqrt(len(logs)))
    return SeedTest(rs, t_upper_tail(t, len(logs) - 1))
