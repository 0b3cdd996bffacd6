"""Everything the engine tells the outside world: events, status.json, console lines, commands.

The engine calls a handful of intention-revealing methods (`emit`,
`status_step`, `handle_commands`…); this class decides how they reach the
event log, the status file and the control socket. Commands are applied by
`backend.commands.apply_command` at step boundaries only.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

from growcockpit.backend.commands import apply_command
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
    Warning,
)
from growcockpit.protocol.rundir import RunPaths, RunStatus, write_status

if TYPE_CHECKING:
    from growcockpit.backend.engine import Trainer
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
        self.emit(Warning(message=message, step=step))

    def paused(self, trainer: Trainer, reason: str) -> None:
        self.emit(Paused(step=trainer.pos.step, reason=reason))
        self.status_state(trainer)

    def resumed(self, trainer: Trainer) -> None:
        self.emit(Resumed(step=trainer.pos.step))
        self.status_state(trainer)

    def _echo(self, event: Event) -> None:
        if self.console is None:
            return
        line = _console_line(event, self.print_every)
        if line:
            print(line, file=self.console, flush=True)

    # ---- status.json -------------------------------------------------------------
    def _write(self, trainer: Trainer, force: bool = True) -> None:
        if self.events is None:
            return
        now = time.time()
        if not force and now - self._last_status < STATUS_EVERY_S:
            return
        self._last_status = now
        s = self.status
        # A finished run's position is one past the last stage: report the last stage.
        s.stage = min(trainer.pos.stage_index, len(trainer.plan.stages) - 1)
        s.stage_name = trainer.plan.stages[s.stage].name
        s.num_stages = len(trainer.plan.stages)
        s.step = trainer.pos.step
        s.total_steps = trainer.plan.total_steps
        s.loss = trainer.last_loss
        if s.state not in ("completed", "stopped", "crashed"):
            s.state = "paused" if trainer.paused else "waiting" if trainer.waiting else "running"
        with self._status_lock:
            write_status(self.paths.status, s)

    def beat(self) -> None:
        """Rewrite status.json as it is, refreshing its heartbeat (heartbeat thread)."""
        if self.events is None:
            return
        with self._status_lock:
            write_status(self.paths.status, self.status)

    def status_step(self, trainer: Trainer) -> None:
        self._write(trainer, force=False)

    def status_stage(self, trainer: Trainer) -> None:
        self._write(trainer)

    def status_state(self, trainer: Trainer) -> None:
        self._write(trainer)

    def status_checkpoint(self, trainer: Trainer, path: str) -> None:
        self.status.last_checkpoint = path
        self._write(trainer)

    def status_final(self, trainer: Trainer, state: str) -> None:
        self.status.state = state
        self._write(trainer)

    # ---- commands ----------------------------------------------------------------
    def handle_commands(self, trainer: Trainer, block: bool) -> None:
        """Apply queued commands on every rank at this step boundary.

        While paused or waiting, rank 0 blocks briefly on the socket and the
        other ranks wait for it inside the agreement collective.
        """
        pending = []
        if self.control is not None:
            pending = self.control.wait(0.5) if block else self.control.poll()
        elif block and not trainer.dist.enabled:
            time.sleep(0.2)
        if block:
            self._write(trainer, force=False)
        count, stop = trainer.dist.agree(len(pending), trainer.stop_requested, trainer.device)
        if stop and not trainer.stopping:
            trainer.stopping = True
            self.warn("stop requested by signal: checkpoint, then end", step=trainer.pos.step)
        if count == 0:
            return
        requests = trainer.dist.broadcast([p.request for p in pending], count)
        for i, request in enumerate(requests):
            ack = apply_command(trainer, request)
            if i < len(pending):
                pending[i].reply(ack)
            self.emit(
                CommandEvent(
                    id=request.id,
                    command=request.command,
                    args=request.args,
                    accepted=ack.accepted,
                    reason=ack.reason,
                    step=trainer.pos.step,
                )
            )
            self._write(trainer)


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
    if isinstance(event, Paused | Resumed | Warning | RunFinished):
        return f"   {event.type}: " + str(
            getattr(event, "message", "") or getattr(event, "status", "") or ""
        )
    if event.type in ("error", "checkpoint"):
        return f"   {event.type}: " + str(
            getattr(event, "message", "") or getattr(event, "path", "")
        )
    return None
