"""What steers the stage loop between steps: one value with explicit transitions.

The loop was once steered by six booleans (paused, waiting, advance_now, stopping,
stop_requested, rewound) that any module holding the trainer could set. Here they are
one `LoopState` that only the engine (backend/loop/engine.py) moves, each move a named
transition, so every combination the loop can be in is the table in
tests/backend/test_loop_state.py:

* `phase`: `running` trains; `waiting` is a manual stage that has run its steps and waits
  for `advance`; `advancing` ends the stage at this boundary (an `advance` command);
  `stopping` checkpoints and ends the run, and no transition leaves it.
* `paused` holds the loop at step boundaries in any phase (a `pause` command or a skipped
  update): a stage advanced or waiting while paused stays paused.
* `stop_signalled`: SIGTERM/SIGINT/SIGHUP arrived; the ranks agree on it at the next
  boundary and the engine then stops. It is the only field a signal handler sets, and
  no transition writes it, so a signal is never lost to a transition it interrupts.

A rollback's "go back to the top of the loop" is not a flag here: it is what
`handle_commands` returns (a rollback was applied), read once by the stage loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from growcockpit.backend.control.progress import RunState

Phase = Literal["running", "waiting", "advancing", "stopping"]


@dataclass
class LoopState:
    phase: Phase = "running"
    paused: bool = False
    stop_signalled: bool = False

    @property
    def stopping(self) -> bool:
        return self.phase == "stopping"

    @property
    def waiting(self) -> bool:
        return self.phase == "waiting"

    @property
    def advancing(self) -> bool:
        return self.phase == "advancing"

    @property
    def blocks(self) -> bool:
        """Commands are waited for (briefly) instead of polled: nothing trains now."""
        return self.paused or self.phase == "waiting"

    @property
    def shown(self) -> RunState:
        """What the cockpit and the command rules see (control/progress.py)."""
        return "paused" if self.paused else "waiting" if self.phase == "waiting" else "running"

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    def wait(self) -> bool:
        """A manual stage ran its steps: wait for `advance`; True when this starts the wait."""
        if self.phase != "running":
            return False
        self.phase = "waiting"
        return True

    def advance(self) -> None:
        if self.phase != "stopping":
            self.phase = "advancing"

    def stop(self) -> None:
        self.phase = "stopping"

    def signal_stop(self) -> None:
        self.stop_signalled = True

    def next_stage(self) -> None:
        """A stage was entered, or a rollback restored a position: train (a stop stays)."""
        if self.phase != "stopping":
            self.phase = "running"
