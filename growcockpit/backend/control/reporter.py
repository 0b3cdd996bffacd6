"""The engine's two connections to the outside: events out (a sink), commands in (a source).

The engine calls a handful of intention-revealing methods (`emit`, `warn`,
`paused`, `command_done`…); the sink decides where events go (backend/control/sinks.py:
events.jsonl, status.json as a fold of the events, the console, mirrors) and the
source where commands come from (the control socket, or a script in a test). The
engine decides what a command does (backend/control/commands.py) and applies it.
"""

from __future__ import annotations

import time

from growcockpit.backend.control.command_source import CommandSource
from growcockpit.backend.control.progress import Progress
from growcockpit.backend.control.sinks import EventSink
from growcockpit.backend.control.startup_phases import StartupClock
from growcockpit.protocol.commands import CommandAck, CommandRequest
from growcockpit.protocol.events import (
    Checkpoint,
    CommandEvent,
    Event,
    Paused,
    Resumed,
    WarningEvent,
)
from growcockpit.protocol.pending import PendingCommand


def drop(event: Event) -> None:
    """The sink of DDP ranks other than 0: they own no log."""


class RunReporter:
    def __init__(self, sink: EventSink = drop, commands: CommandSource | None = None) -> None:
        self.sink = sink
        self.commands = commands
        self.last_checkpoint: str | None = None  # this process's last good one
        self.startup = StartupClock(self.emit)  # the start-up phases, until the first step

    def emit(self, event: Event) -> Event:
        self.sink(event)
        if isinstance(event, Checkpoint):
            self.last_checkpoint = event.path
        return event

    def warn(self, message: str, step: int | None = None) -> None:
        self.emit(WarningEvent(message=message, step=step))

    def paused(self, run: Progress, reason: str) -> None:
        self.emit(Paused(step=run.step, reason=reason))

    def resumed(self, run: Progress) -> None:
        self.emit(Resumed(step=run.step))

    def take_commands(self, block: bool, alone: bool) -> list[PendingCommand]:
        """The commands queued (rank 0; other ranks have no source).

        While paused or waiting (`block`), wait briefly for one instead of
        spinning; a process `alone` (no DDP peers to wait for in the agreement
        collective) without a source just sleeps.
        """
        if self.commands is not None:
            return self.commands.wait(0.5) if block else self.commands.poll()
        if block and alone:
            time.sleep(0.2)
        return []

    def command_done(self, request: CommandRequest, ack: CommandAck, run: Progress) -> None:
        self.emit(
            CommandEvent(
                id=request.id,
                command=request.command,
                args=request.args,
                accepted=ack.accepted,
                reason=ack.reason,
                step=run.step,
            )
        )
