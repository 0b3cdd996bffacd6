"""How many more tokens the full-depth model would need before depth pays, fitted to fixed
models of several depths each trained to the end at several budgets.

Why: where the depth gate fails, the useful next question is how far off the budget is. One
budget cannot say: it gives one final loss per depth, and a loss-vs-tokens law cannot be
fitted to one point. With every depth trained (each run decayed to its own end) at ≥ 3
budgets, the law

    L_K(D) = E_K + B · D^(−β)        (D: tokens seen by the K-layer model)

— a floor per depth (what the model's size caps it at) and a data term shared by the depths,
the data half of the Chinchilla form at fixed model size — is fitted by least squares (β on
a grid, E_K and B in closed form for each β). At a compute budget C the K-layer model sees
C / f_K tokens (f_K: its FLOPs per token), so the full depth F beats control K once

    E_K − E_F > B · C^(−β) · (f_F^β − f_K^β),

which holds from one crossing budget on when E_F < E_K, and never when it is not. The
estimate is said only inside `EXTRAPOLATION_LIMIT` times the largest budget measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

BETAS = tuple(round(0.02 + 0.005 * i, 3) for i in range(297))  # 0.02 … 1.5
MIN_BUDGETS = 3  # per depth: a floor, and a slope shared with the others, need more than two
EXTRAPOLATION_LIMIT = 4.0  # the crossing is said only up to this many times the largest budget


@dataclass(frozen=True)
class DepthPoint:
    """One fixed-depth run trained to its end: its depth, tokens seen, FLOPs, final loss."""

    layers: int
    tokens: float
    flops: float
    final_loss: float

    @property
    def flops_per_token(self) -> float:
        return self.flops / self.tokens


@dataclass(frozen=True)
class DepthLaw:
    floors: dict[int, float]  # E_K per depth
    scale: float  # B
    exponent: float  # β
    rms: float  # residual root mean square over the points


class DepthFitError(ValueError):
    """The points cannot carry the fit (the message says what is missing)."""


def _by_depth(points: Sequence[DepthPoint]) -> dict[int, list[DepthPoint]]:
    groups: dict[int, list[DepthPoint]] = {}
    for p in points:
        if p.tokens <= 0 or p.flops <= 0 or not math.isfinite(p.final_loss):
            raise DepthFitError(f"a {p.layers}-layer run has no tokens, FLOPs or final loss")
        groups.setdefault(p.layers, []).append(p)
    if len(groups) < 2:
        raise DepthFitError("the fit needs fixed models of at least two depths")
    for layers, group in groups.items():
        if len({p.tokens for p in group}) < MIN_BUDGETS:
            raise DepthFitError(
                f"the {layers}-layer model ran at {len({p.tokens for p in group})} budget(s); "
                f"the fit needs each depth at ≥ {MIN_BUDGETS} budgets, each run to its end"
            )
    return groups


def _fit_at(
    groups: dict[int, list[DepthPoint]], beta: float
) -> tuple[float, dict[int, float], float]:
    """B, E_K and the squared error at one β (least squares within the depths)."""
    xs = {k: [p.tokens**-beta for p in g] for k, g in groups.items()}
    means = {
        k: (sum(xs[k]) / len(g), sum(p.final_loss for p in g) / len(g)) for k, g in groups.items()
    }
    num = sum(
        (x - means[k][0]) * (p.final_loss - means[k][1])
        for k, g in groups.items()
        for x, p in zip(xs[k], g, strict=True)
    )
    den = sum((x - means[k][0]) ** 2 for k in groups for x in xs[k])
    scale = num / den if den > 0 else 0.0
    floors = {k: my - scale * mx for k, (mx, my) in means.items()}
    sse = sum(
        (floors[k] + scale * x - p.final_loss) ** 2
        for k, g in groups.items()
        for x, p in zip(xs[k], g, strict=True)
    )
    return scale, floors, sse


def fit_depth_law(points: Sequence[DepthPoint]) -> DepthLaw:
    """The law of the module doc fitted to `points` (DepthFitError when it cannot be)."""
    groups = _by_depth(points)
    fits = [(beta, *_fit_at(groups, beta)) for beta in BETAS]
    beta, scale, floors, sse = min(fits, key=lambda f: f[3])
    if scale <= 0:
        raise DepthFitError("the final loss does not fall with tokens in these runs: no law to fit")
    return DepthLaw(floors, scale, beta, math.sqrt(sse / len(points)))


def crossing_flops(law: DepthLaw, full: int, flops_per_token: dict[int, float]) -> float | None:
    """The compute from which the full depth ends below every control; None: never, by the
    fit (a control's floor is no higher than the full depth's)."""
    worst = 0.0
    for layers, floor in law.floors.items():
        if layers == full:
            continue
        lead = floor - law.floors[full]
        if lead <= 0:
            return None
        gap = flops_per_token[full] ** law.exponent - flops_per_token[layers] ** law.exponent
        worst = max(worst, (law.scale * gap / lead) ** (1.0 / law.exponent))
    return worst


def tokens_needed(points: Sequence[DepthPoint], full: int, budget_flops: float) -> str:
    """One clause for the gate's line: the tokens the full model would need for depth to pay,
    or why the fit cannot say."""
    try:
        law = fit_depth_law(points)
    except DepthFitError as exc:
        return f"tokens needed not estimated: {exc}"
    if full not in law.floors:
        return f"tokens needed not estimated: no {full}-layer runs among the points"
    per_token = {k: min(p.flops_per_token for p in points if p.layers == k) for k in law.floors}
    fitted = f"fit L = E_K + {law.scale:.3g}·D^-{law.exponent:g} over {len(points)} runs, rms {law.rms:.3f}"
    crossing = crossing_flops(law, full, per_token)
    if crossing is None:
        return f"by the {fitted}, no budget makes depth pay (a shallower floor is as low)"
    largest = max(p.flops for p in points)
    if crossing > EXTRAPOLATION_LIMIT * largest:
        return (
            f"depth would pay beyond {EXTRAPOLATION_LIMIT:g}× the largest budget measured: "
            f"not estimated ({fitted})"
        )
    tokens = crossing / per_token[full]
    if crossing <= budget_flops:
        return f"by the {fitted}, depth pays from ≈ {tokens / 1e6:.3g} M tokens, within this budget"
    return (
        f"the {full}-layer model would need ≈ {tokens / 1e6:.3g} M tokens "
        f"({crossing / budget_flops:.2f}× this budget) for depth to pay ({fitted})"
    )
