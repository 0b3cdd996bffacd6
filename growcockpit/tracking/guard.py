"""The engine's NaN / spike guard for a loop growcockpit only watches.

The engine judges each step's loss on the device before the update (backend/loop/
sentinel.py) and pauses with the way back. A tracked loop hands its loss to `step()`
after its own `optimizer.step()`, so the update is in already; what the cockpit can still
do is what matters most: stop the loop there (it waits in `step()`) before more updates
pile onto a blow-up, and say so with the engine's words and the advice that fits a loop
of the user's own. The judgement is the sentinel's: a non-finite loss, or a robust
z-score (median and MAD of the last `window` finite losses, the scale floored at 1 % of
the median and at LOSS_FLOOR nats) over `limit`; after a spike the window starts afresh under a ceiling of
CEILING_FACTOR × the median from before it. The loss is already a host float here, so
this is a few list operations per step.
"""

from __future__ import annotations

import math
import statistics
from collections import deque

from growcockpit.backend.loop.sentinel import (
    ABSOLUTE_FLOOR,
    CEILING_FACTOR,
    LOSS_FLOOR,
    MAD_TO_SIGMA,
    RELATIVE_FLOOR,
)


def advice(run_dir: str, checkpoint: int | None) -> str:
    """The way back for a loop of the user's own (a tracked loop cannot `rollback`)."""
    back = (
        f"or stop and restart your script from the checkpoint of step {checkpoint}"
        if checkpoint is not None
        else "or stop (a checkpoint is written) and restart your script at a lower LR"
    )
    return (
        f"the update of that step is in the weights; lower the LR "
        f"(`growcockpit ctl {run_dir} set_lr 0.1`) and `growcockpit ctl {run_dir} resume`, "
        f"{back}; or resume if the jump is expected (the spike window starts afresh)"
    )


class LossGuard:
    """Judges each step's loss; `check()` returns a Verdict when the loop should pause."""

    def __init__(self, window: int, limit: float) -> None:
        self.window = window if limit > 0 else 0
        self.limit = limit
        self.values: deque[float] = deque(maxlen=max(1, self.window))
        self.ceiling: float | None = None  # while refilling after a spike

    def check(self, loss: float | None, step: int) -> tuple[str, str] | None:
        """(pause reason, what happened) for a bad loss, else None (and the loss is kept)."""
        if loss is None:
            return None
        if not math.isfinite(loss):
            return "non-finite loss", f"loss is {loss} at step {step}"
        if self.window <= 0:
            return None
        full = len(self.values) >= self.window
        if full:
            self.ceiling = None
            median = statistics.median(self.values)
            mad = statistics.median(abs(v - median) for v in self.values)
            scale = max(
                MAD_TO_SIGMA * mad, RELATIVE_FLOOR * abs(median), LOSS_FLOOR, ABSOLUTE_FLOOR
            )
            z = (loss - median) / scale
            if z > self.limit:
                self._refill(median)
                return "loss spike", (
                    f"loss spike at step {step}: loss {loss:.4g} is {z:.3g} robust SDs above "
                    f"the median {median:.4g} of the last {self.window} steps "
                    f"(metrics.spike_z = {self.limit:g})"
                )
        elif self.ceiling is not None and loss > self.ceiling:
            median = self.ceiling / CEILING_FACTOR
            self._refill(median)
            return "loss spike", (
                f"loss spike at step {step}: loss {loss:.4g} is over {CEILING_FACTOR:g}x the "
                f"median {median:.4g} from before the last spike (the ceiling while the "
                "spike window refills)"
            )
        self.values.append(loss)
        return None

    def _refill(self, median: float) -> None:
        if self.ceiling is None:
            self.ceiling = CEILING_FACTOR * abs(median)
        self.values.clear()
