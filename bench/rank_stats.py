"""Rank correlations for bench/race_trust.py, stdlib only (no SciPy in the project).

Spearman's ρ is Pearson's r over average ranks (ties share the mean of their ranks);
Kendall's τ-b counts concordant minus discordant pairs over the pairs not tied in both,
so a tie in either order neither helps nor hurts. A value the race could not measure
(None or NaN: a crashed run) ranks last, as growcockpit.race.halving.ranked ranks it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _clean(values: Sequence[float | None]) -> list[float]:
    return [math.inf if v is None or math.isnan(v) else float(v) for v in values]


def average_ranks(values: Sequence[float | None]) -> list[float]:
    """1-based ranks, ties at the mean of the ranks they span."""
    xs = _clean(values)
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman_rho(a: Sequence[float | None], b: Sequence[float | None]) -> float:
    """ρ in [-1, 1]; 0 when either side is constant (no order to agree with)."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError("two sequences of one length ≥ 2")
    ra, rb = average_ranks(a), average_ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / math.sqrt(va * vb) if va > 0 and vb > 0 else 0.0


def kendall_tau_b(a: Sequence[float | None], b: Sequence[float | None]) -> float:
    """τ-b in [-1, 1]; 0 when either side is constant."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError("two sequences of one length ≥ 2")
    xa, xb = _clean(a), _clean(b)
    conc = disc = tie_a = tie_b = 0
    n = len(xa)
    for i in range(n):
        for j in range(i + 1, n):
            sa = (xa[i] > xa[j]) - (xa[i] < xa[j])  # the sign, also for two infinities
            sb = (xb[i] > xb[j]) - (xb[i] < xb[j])
            if sa == 0 and sb == 0:
                continue
            if sa == 0:
                tie_a += 1
            elif sb == 0:
                tie_b += 1
            elif sa == sb:
                conc += 1
            else:
                disc += 1
    denom = math.sqrt((conc + disc + tie_a) * (conc + disc + tie_b))
    return (conc - disc) / denom if denom > 0 else 0.0
