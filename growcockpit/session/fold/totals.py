"""Whole-model numbers from one `layer_stats` event's per-layer values: the total grad
norm and the update ratio, as a W&B or TensorBoard user plots them beside the loss.

Both folds of `layer_stats` (the event-by-event one and the bulk one for old events)
call `add_totals`, so a plot of these series is the same however the log was read."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from growcockpit.session.fold.state import RunData

LayerValues = tuple[object, object, object]  # (grad norm, weight norm, update ratio) as logged


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def totals(layers: Iterable[LayerValues]) -> tuple[float | None, float | None]:
    """(total grad norm, update ratio) of the layers that logged them; None where none did.

    Total grad norm: sqrt(Σ g²), the norm of all gradients together (what gradient
    clipping sees). Update ratio: ‖Δθ‖/‖θ‖ of the whole model, sqrt(Σ (r·w)²) / sqrt(Σ w²)
    over the layers with a ratio and a weight norm, so a big layer weighs as much as its
    parameters do rather than as much as a tiny one."""
    grad_sq = update_sq = weight_sq = 0.0
    grads = ratios = 0
    for grad, weight, ratio in layers:
        g, w, r = _finite(grad), _finite(weight), _finite(ratio)
        if g is not None:
            grad_sq, grads = grad_sq + g * g, grads + 1
        if w is not None and r is not None:
            update_sq, weight_sq, ratios = update_sq + (r * w) ** 2, weight_sq + w * w, ratios + 1
    grad_total = math.sqrt(grad_sq) if grads else None
    ratio_total = math.sqrt(update_sq / weight_sq) if ratios and weight_sq > 0 else None
    return grad_total, ratio_total


def add_totals(state: RunData, step: int, layers: Iterable[LayerValues]) -> None:
    """Append one `layer_stats` event's totals to the state's series."""
    grad_total, ratio_total = totals(layers)
    if grad_total is not None:
        state.grad_norm_series.append(step, grad_total)
    if ratio_total is not None:
        state.update_ratio_series.append(step, ratio_total)
