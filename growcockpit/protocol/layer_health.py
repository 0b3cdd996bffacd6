"""Layer health: growth's traps read from the layer stats every run reports.

Two traps of growing a model, judged from what the backend already samples
(`LayerStats`: per layer its grad norm, ‖Δθ‖/‖θ‖, trainable or not):

- backward-starved: a trainable layer whose gradient norm stayed below
  `metrics.starved_fraction` of the trainable layers' median for each of the
  last `metrics.starved_samples` samples (a new layer that silently barely trains);
- moved while frozen: a layer reported frozen whose last sampled update ‖Δθ‖/‖θ‖
  is above zero (its weights changed although it should not train).

Stdlib only: the cockpit's layers table shows the verdict per layer (`health`),
and the plan's `[metrics]` holds the thresholds (defaults quiet on healthy runs:
a layer 100x weaker than the median for 8 samples in a row).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

STARVED_FRACTION = 0.01
STARVED_SAMPLES = 8
MOVED_TOLERANCE = 0.0  # a frozen layer's ‖Δθ‖/‖θ‖ is exactly 0 when nothing touched it

OK, STARVED, MOVED = "ok", "starved", "moved"


@dataclass(frozen=True)
class HealthThresholds:
    starved_fraction: float = STARVED_FRACTION  # 0 turns the starved check off
    starved_samples: int = STARVED_SAMPLES

    @classmethod
    def of_plan(cls, plan: Mapping[str, Any]) -> HealthThresholds:
        """From a run's plan (as events carry it): its [metrics] keys, else the defaults."""
        metrics = plan.get("metrics") if isinstance(plan, Mapping) else None
        m: Mapping[str, Any] = metrics if isinstance(metrics, Mapping) else {}
        fraction, samples = m.get("starved_fraction"), m.get("starved_samples")
        f = float(fraction) if isinstance(fraction, int | float) else STARVED_FRACTION
        n = samples if isinstance(samples, int) and samples >= 1 else STARVED_SAMPLES
        if isinstance(fraction, bool) or isinstance(samples, bool):
            f, n = STARVED_FRACTION, STARVED_SAMPLES
        return cls(f, int(n))


@dataclass(frozen=True)
class LayerSample:
    """What health needs of one layer: its recent grad norms (oldest first), trainable or
    not, and its last update ratio."""

    id: int
    trainable: bool
    grad_hist: Sequence[float]
    update_ratio: float | None


def starved(layers: Iterable[LayerSample], t: HealthThresholds) -> set[int]:
    """Trainable layers below `starved_fraction` × the trainable median, at each of the
    last `starved_samples` samples (counted from the newest, as all layers sample together)."""
    rows = [r for r in layers if r.trainable]
    n = t.starved_samples
    if t.starved_fraction <= 0 or n < 1 or len(rows) < 2:
        return set()
    out: set[int] = set()
    for row in rows:
        if len(row.grad_hist) < n:
            continue
        low = True
        for k in range(1, n + 1):
            column = [r.grad_hist[-k] for r in rows if len(r.grad_hist) >= k]
            if row.grad_hist[-k] >= t.starved_fraction * statistics.median(column):
                low = False
                break
        if low:
            out.add(row.id)
    return out


def moved_while_frozen(row: LayerSample) -> bool:
    return not row.trainable and row.update_ratio is not None and row.update_ratio > MOVED_TOLERANCE


def health(layers: Sequence[LayerSample], t: HealthThresholds) -> dict[int, str]:
    """Per layer id: ok, starved (trainable, barely any gradient) or moved (frozen, changed)."""
    weak = starved(layers, t)
    out: dict[int, str] = {}
    for row in layers:
        out[row.id] = MOVED if moved_while_frozen(row) else STARVED if row.id in weak else OK
    return out
