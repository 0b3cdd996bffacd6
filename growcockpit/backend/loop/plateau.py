"""When a stage's loss stops falling fast enough: the `advance = "plateau"` trigger.

Growth pays when the small model has learned what it can cheaply learn:
training it further costs steps that buy little. The trigger watches an
exponential moving average of the training loss and its drop per million
tokens over the last `patience` steps; once the window is full and that drop
is below `min_delta`, it fires and the engine enters the next stage.

- EMA: ema ← ema + a·(loss − ema), a = 2 / (patience + 1) (a span of
  `patience` steps), so one noisy batch does not fire it.
- rate = (ema `patience` steps ago − ema now) / tokens seen since × 1e6.
- Fires when `steps_seen ≥ patience` and rate ≤ min_delta (min_delta = 0:
  when the EMA stops falling); the stage's `steps` stay the upper bound.

Pure Python (no torch, no Textual): its whole state is a small dict (`state()` /
`restore()`), kept in the checkpoint so a resumed run fires at the same step.
Non-finite losses are ignored (the engine pauses on them anyway).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

from growcockpit.plan.advance_checks import min_delta_of
from growcockpit.plan.types import Stage
from growcockpit.protocol.events import PlateauCheck


@dataclass(frozen=True)
class PlateauState:
    """What the dashboard shows: how close the trigger is to firing."""

    ema: float | None
    rate: float | None  # EMA drop per 1M tokens over the window; None until the window is full
    min_delta: float
    patience: int
    seen: int  # reported steps in this stage, capped at patience
    fired: bool


class PlateauTrigger:
    def __init__(self, patience: int, min_delta: float) -> None:
        if patience < 1:
            raise ValueError(f"patience must be ≥ 1, got {patience}")
        self.patience = patience
        self.min_delta = min_delta
        self.alpha = 2.0 / (patience + 1)
        self.ema: float | None = None
        self.window: deque[tuple[int, float]] = deque(maxlen=patience + 1)  # (tokens, ema)
        self.fired = False

    def observe(self, loss: float, tokens: int) -> bool:
        """Feed one step's loss and the run's token count after it; True once it fires."""
        if self.fired or not math.isfinite(loss):
            return self.fired
        self.ema = loss if self.ema is None else self.ema + self.alpha * (loss - self.ema)
        self.window.append((tokens, self.ema))
        rate = self.rate()
        if rate is not None and rate <= self.min_delta:
            self.fired = True
        return self.fired

    def rate(self) -> float | None:
        if len(self.window) <= self.patience:
            return None
        (t0, e0), (t1, e1) = self.window[0], self.window[-1]
        if t1 <= t0:
            return None
        return (e0 - e1) / (t1 - t0) * 1e6

    def snapshot(self) -> PlateauState:
        return PlateauState(
            ema=self.ema,
            rate=self.rate(),
            min_delta=self.min_delta,
            patience=self.patience,
            seen=min(self.patience, max(0, len(self.window) - 1)),
            fired=self.fired,
        )

    def state(self) -> dict[str, Any]:
        return {"ema": self.ema, "window": [list(w) for w in self.window], "fired": self.fired}

    def restore(self, state: dict[str, Any]) -> None:
        self.ema = state.get("ema")
        self.window.clear()
        for tokens, ema in state.get("window", []):
            self.window.append((int(tokens), float(ema)))
        self.fired = bool(state.get("fired", False))


def trigger_for(stage: Stage, saved: dict[str, Any] | None = None) -> PlateauTrigger | None:
    """The stage's trigger (None unless advance = "plateau"), restored from a checkpoint's state."""
    if stage.advance != "plateau" or stage.patience is None:
        return None
    trigger = PlateauTrigger(stage.patience, min_delta_of(stage.min_delta))
    if saved:
        trigger.restore(saved)
    return trigger


def check_event(trigger: PlateauTrigger, step: int, stage: int) -> PlateauCheck:
    s = trigger.snapshot()
    return PlateauCheck(
        step=step,
        stage=stage,
        ema=s.ema,
        rate=s.rate,
        min_delta=s.min_delta,
        patience=s.patience,
        seen=s.seen,
        fired=s.fired,
    )
