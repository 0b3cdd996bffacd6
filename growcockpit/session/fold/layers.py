"""One row per transformer layer, and compact layer-id ranges.

Per-layer fwd/bwd milliseconds come from single sampled steps and jitter a
lot (one sample can exceed a whole step's mean), so a row keeps the recent
samples and shows their median with the sample count. The window restarts
whenever the layer's work changes (a new stage, or trainable ↔ frozen), so a
frozen layer never shows the backward time it had while it trained.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field

TIMING_WINDOW = 15  # timing samples per layer in the rolling median


def _window() -> deque[float]:
    return deque(maxlen=TIMING_WINDOW)


@dataclass
class LayerRow:
    id: int
    trainable: bool = True
    new: bool = False  # added by the operator that entered the current stage
    grad_norm: float | None = None
    weight_norm: float | None = None
    update_ratio: float | None = None  # ‖Δθ‖/‖θ‖ of the last sampled optimizer step
    fwd_samples: deque[float] = field(default_factory=_window)
    bwd_samples: deque[float] = field(default_factory=_window)
    grad_hist: deque[float] = field(default_factory=lambda: deque(maxlen=32))

    @property
    def state(self) -> str:
        """trainable | frozen | new (new: added by this stage's operator)."""
        if self.new:
            return "new"
        return "trainable" if self.trainable else "frozen"

    @property
    def fwd_ms(self) -> float | None:
        return statistics.median(self.fwd_samples) if self.fwd_samples else None

    @property
    def bwd_ms(self) -> float | None:
        return statistics.median(self.bwd_samples) if self.bwd_samples else None

    @property
    def timing_samples(self) -> int:
        return max(len(self.fwd_samples), len(self.bwd_samples))

    def restart_timing(self) -> None:
        self.fwd_samples.clear()
        self.bwd_samples.clear()
