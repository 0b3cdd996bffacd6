"""Loss-curve smoothing as W&B users know it: a time-weighted, debiased exponential moving
average (TWEMA), plus the ladder of factors the cockpit's keys step through.

Why this one: a plain per-point EMA smooths a run logged every step far more (per unit
of x) than one logged every tenth step, and a run plotted against training time more
where its steps were fast; overlaid curves then disagree for no reason. TWEMA decays a
point's weight with its *x distance* from the newest one, measured in thousandths of the
plotted x range, so curves of any density get the same visual smoothing. The running
sum starts at zero and is divided by the sum of its weights (as Adam corrects its
moments' bias), so the first point is exact and early points are not pulled to zero.
Pure Python, no Textual: the dashboard and the compare screen share it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# A gap of this fraction of the x range decays a point's weight by one `weight` factor:
# a series of this many evenly spaced points smooths like a per-point EMA of `weight`.
VIEWPORT_SCALE = 1000.0
MAX_WEIGHT = 0.999  # the factor's weight is capped: factor 1 would freeze the curve
FACTORS = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)  # what the keys step through
DEFAULT_FACTOR = 0.9


def twema(xs: Sequence[float], ys: Sequence[float], factor: float) -> list[float]:
    """The smoothed `ys` (same length); `xs` ascending. `factor` in [0, 1): 0 is the raw series.

    The per-point decay is `sqrt(factor) ** (dx / range * VIEWPORT_SCALE)`, so points at
    one x (dx = 0) are averaged with full weight, and a larger factor always smooths more.
    A non-finite y (an inf loss) is passed through and kept out of the average.
    """
    if len(xs) != len(ys):
        raise ValueError(f"twema: {len(xs)} x values but {len(ys)} y values")
    if factor <= 0.0 or len(ys) < 2:
        return list(ys)
    weight = min(math.sqrt(factor), MAX_WEIGHT)
    span = xs[-1] - xs[0]
    # log of the weight per thousandth of the x range (dx is divided by the span first, so
    # a span near zero cannot overflow it); a series at a single x averages all its points
    per_unit = math.log(weight) * VIEWPORT_SCALE
    out: list[float] = []
    total = 0.0
    norm = 0.0
    prev = xs[0]
    exp = math.exp
    isfinite = math.isfinite
    for x, y in zip(xs, ys, strict=True):
        if not isfinite(y):
            out.append(y)
            continue
        decay = exp(per_unit * ((x - prev) / span)) if span > 0 else 1.0
        total = total * decay + y
        norm = norm * decay + 1.0
        out.append(total / norm)
        prev = x
    return out


def step_factor(factor: float, direction: int) -> float:
    """The next factor of `FACTORS` above (`direction` > 0) or below the current one."""
    if direction > 0:
        return next((f for f in FACTORS if f > factor + 1e-9), FACTORS[-1])
    return next((f for f in reversed(FACTORS) if f < factor - 1e-9), FACTORS[0])
