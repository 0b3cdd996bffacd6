"""Where a live run stands, as the status writer and the command rules see it.

A plain value the engine hands out (`Trainer.progress()`), so that the
reporter and the command rules depend on this module and not on the Trainer:
they never read the loop's internals, and the engine stays the only place
that changes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from growcockpit.plan.types import Plan

RunState = Literal["running", "paused", "waiting"]  # what the cockpit shows (loop_state.py)


@dataclass(frozen=True)
class Progress:
    plan: Plan
    stage_index: int  # one past the last stage once the run has finished
    step: int
    loss: float | None
    state: RunState
    stopping: bool = False
    lr_scale: float = 1.0
