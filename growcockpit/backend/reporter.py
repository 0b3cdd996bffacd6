"""Everything the engine tells the outside world: events, status.json, console lines.

The engine calls a handful of intention-revealing methods (`emit`,
`status_step`, `command_done`…) with explicit values (`Progress`); this class
decides how they reach the event log, the status file and the console. It is
also where queued control commands are taken from (`take_commands`); the
engine decides what they do (backend/commands.py) and applies them.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

from growcockpit.backend.progress import Progress
from growcockpit.protocol.commands import CommandAck, CommandRequest
from growcockpit.protocol.control import ControlServer
from growcockpit.protocol.eventlog import EventLog
from growcockpit.protocol.events import (
    CommandEvent,
    Eval,
    Event,
    Grow,
    Paused,
    Resumed,
    RunFinished,
    StageStarted,
    Step,
    WarningEvent,
)
from growcockpit.protocol.pending import PendingCommand
from growcockpit.protocol.rundir import RunPaths, RunStatus, write_status

if TYPE_CHECKING:
    from growcockpit.export import Mirrors

STATUS_EVERY_S = 1.0


class RunReporter:
    def __init__(
        self,
        paths: RunPaths,
        events: EventLog | None,
        status: RunStatus,
        control: ControlServer | None,
        console: TextIO | None = sys.stdout,
        print_every: int = 10,
    ) -> None:
        self.paths = paths
        self.events = events
        self.status = status
        self.control = control
        self.console = console
        self.print_every = print_every
        self._last_status = 0.0
        self.mirrors: Mirrors | None = None  # TensorBoard / W&B, when the plan asks for them
        self._status_lock = threading.Lock()  # the heartbeat thread writes status.json too

    # ---- events ------------------------------------------------------------------
    def emit(self, event: Event) -> Event:
        """Log an event; a no-op on DDP ranks other than 0, which own no log."""
        if self.events is None:
            return event
        self.events.append(event)
        self._echo(event)
        for problem in self.mirrors(event) if self.mirrors else ():
            self.warn(problem)
        return event

    def warn(self, message: str, step: int | None = None) -> None:
        self.emit(WarningEvent(message=message, step=step))

    def paused(self, run: Progress, reason: str) -> None:
        self.emit(Paused(step=run.step, reason=reason))
        self.status_state(run)

    def resumed(self, run: Progress) -> None:
        self.emit(Resumed(step=run.step))
        self.status_state(run)

    def _echo(self, event: Event) -> None:
        if self.console is None:
            return
        line = _console_line(event, self.print_every)
        if line:
            print(line, file=self.console, flush=True)

    # ---- status.json -------------------------------------------------------------
    def _write(self, run: Progress, force: bool = True) -> None:
        if self.events is None:
            return
        now = time.time()
        if not force and now - self._last_status < STATUS_EVERY_S:
            return
        self._last_status = now
        s = self.status
        # A finished run's position is one past the last stage: report the last stage.
        s.stage = min(run.stage_index, len(run.plan.stages) - 1)
        s.stage_name = run.plan.stages[s.stage].name
        s.num_stages = len(run.plan.stages)
        s.step = run.step
        s.total_steps = run.plan.total_steps
        s.loss = run.loss
        if s.state not in ("completed", "stopped", "crashed"):
            s.state = run.state
        with self._status_lock:
            write_status(self.paths.status, s)

    def beat(self) -> None:
        """Rewrite status.json as it is, refreshing its heartbeat (heartbeat thread)."""
        if self.events is None:
            return
        with self._status_lock:
            write_status(self.paths.status, self.status)

    def status_step(self, run: Progress) -> None:
        self._write(run, force=False)

    def status_stage(self, run: Progress) -> None:
        self._write(run)

    def status_state(self, run: Progress) -> None:
        self._write(run)

    def status_checkpoint(self, run: Progress, path: str) -> None:
        self.status.last_checkpoint = path
        self._write(run)

    def status_final(self, run: Progress, state: str) -> None:
        self.status.state = state
        self._write(run)

    # ---- commands ----------------------------------------------------------------
    def take_commands(self, block: bool, alone: bool) -> list[PendingCommand]:
        """The commands queued on the control socket (rank 0; other ranks have none).

        While paused or waiting (`block`), wait briefly for one instead of
        spinning; a process `alone` (no DDP peers to wait for in the agreement
        collective) without a socket just sleeps.
        """
        if self.control is not None:
            return self.control.wait(0.5) if block else self.control.poll()
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
        self._write(run)


def _console_line(event: Event, every: int) -> str | None:
    """Headless progress: a line per stage, grow, eval, command, and every `every` steps."""
    if isinstance(event, Step):
        if event.step % every:
            return None
        return (
            f"step {event.step:>6}  stage {event.stage + 1}  loss {event.loss:.4f}  "
            f"lr {event.lr:.2e}  {event.tokens_per_s:,.0f} tok/s  {event.step_ms:.0f} ms/step"
        )
    if isinstance(event, StageStarted):
        return (
            f"== stage {event.index + 1} {event.name}: {event.layers} layers via {event.operator}, "
            f"training layers {event.trainable_layers or 'none'} for {event.steps} steps"
        )
    if isinstance(event, Grow):
        return f"   grow {event.operator}: {event.from_layers} -> {event.to_layers} layers ({event.detail})"
    if isinstance(event, Eval):
        return f"   eval step {event.step}: val loss {event.val_loss:.4f}  ppl {event.val_ppl:.1f}"
    if isinstance(event, CommandEvent):
        verdict = "accepted" if event.accepted else f"refused: {event.reason}"
        return f"   command {event.command}: {verdict}"
    if isinstance(event, Paused | Resumed | WarningEvent | RunFinished):
        return f"   {event.type}: " + str(
            getattr(event, "message", "") or getattr(event, "status", "") or ""
        )
    if event.type in ("error", "checkpoint"):
        return f"   {event.type}: " + str(
            getattr(event, "message", "") or getattr(event, "path", "")
        )
    return None
