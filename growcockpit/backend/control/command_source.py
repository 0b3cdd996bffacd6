"""Where the engine's commands come from: the control socket, or a script in a test."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from growcockpit.protocol.commands import CommandRequest
from growcockpit.protocol.events import Event, Step
from growcockpit.protocol.pending import PendingCommand


class CommandSource(Protocol):
    """`ControlServer` is one; so is `ScriptedCommands`."""

    def poll(self) -> list[PendingCommand]: ...

    def wait(self, timeout: float) -> list[PendingCommand]: ...


class ScriptedCommands:
    """Commands that arrive once the run has reported a step, or an event of a type, as if
    typed then: `{3: [pause, resume], "waiting": [advance]}` pauses after step 3, resumes,
    and advances once the loop waits for a manual advance.

    Add it to the sink as well, so that it sees the events go by; the commands given
    are kept in `sent` (each `PendingCommand` holds its ack)."""

    def __init__(self, script: Mapping[int | str, Sequence[CommandRequest]]) -> None:
        self.script = {key: list(requests) for key, requests in script.items()}
        self.step = -1
        self.seen: set[str] = set()
        self.sent: list[PendingCommand] = []

    def __call__(self, event: Event) -> None:
        self.seen.add(event.type)
        if isinstance(event, Step):
            self.step = event.step

    def _due(self, key: int | str) -> bool:
        return key in self.seen if isinstance(key, str) else key <= self.step

    def poll(self) -> list[PendingCommand]:
        """The next due command alone: a `pause` then blocks the loop, which then waits
        for the following one (`resume`), as with a person at the keys."""
        key = next((k for k in self.script if self._due(k)), None)
        if key is None:
            return []
        requests = self.script[key]
        out = [PendingCommand(requests.pop(0))]
        if not requests:
            del self.script[key]
        self.sent += out
        return out

    def wait(self, timeout: float) -> list[PendingCommand]:
        out = self.poll()
        if not out:
            time.sleep(min(timeout, 0.01))
        return out
