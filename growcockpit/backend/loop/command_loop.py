"""Control commands at a step boundary: take them, agree on them, apply their intents.

`commands.decide` says what a command means (an intent, or a refusal);
`apply_intent` carries it out by calling the trainer's own methods (pause, stop,
rollback, ...), so that the engine (backend/loop/engine.py) stays the one writer of
its state. `CommandHost` is what commands read of the trainer and the methods they
may call; this module needs no Trainer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from growcockpit.backend.control.commands import (
    Advance,
    Intent,
    Pause,
    Refusal,
    ReplaceStages,
    Resume,
    Rollback,
    ScaleLr,
    Stop,
    TakeCheckpoint,
    decide,
)
from growcockpit.backend.control.progress import Progress
from growcockpit.backend.loop.loop_state import LoopState
from growcockpit.backend.loop.trainer_reads import TrainerReads
from growcockpit.backend.state.restore import RestoreError
from growcockpit.plan.types import Plan
from growcockpit.protocol.commands import CommandAck, CommandRequest


class CommandHost(TrainerReads, Protocol):
    """What commands read of the trainer, and the trainer's methods they call."""

    @property
    def loop(self) -> LoopState: ...

    def progress(self) -> Progress: ...

    def pause(self, reason: str) -> None: ...

    def resume(self) -> None: ...

    def advance(self) -> None: ...

    def stop(self) -> None: ...

    def scale_lr(self, factor: float) -> None: ...

    def current_lr(self) -> float: ...

    def checkpoint(self, reason: str) -> Path | None: ...

    def rollback(self, step: int | None, lr_scale: float | None = None) -> str: ...

    def replan(self, plan: Plan, from_stage: int) -> None: ...


def handle_commands(host: CommandHost, block: bool) -> bool:
    """Apply queued commands on every rank at this step boundary; True when one of them
    rolled the run back (the stage loop then starts again from the restored position).

    While paused or waiting, rank 0 blocks briefly on the socket and the
    other ranks wait for it inside the agreement collective.
    """
    pending = host.report.take_commands(block, alone=not host.dist.enabled)
    local = [p.request for p in pending]
    requests, stop = host.dist.agree_commands(local, host.loop.stop_signalled, host.device)
    if stop and not host.loop.stopping:
        host.stop()
        host.report.warn("stop requested by signal: checkpoint, then end", step=host.pos.step)
    rewound = False
    for i, request in enumerate(requests):
        ack = run_command(host, request)
        rewound |= ack.accepted and request.command == "rollback"
        if i < len(pending):
            pending[i].reply(ack)
        host.report.command_done(request, ack, host.progress())
    return rewound


def run_command(host: CommandHost, request: CommandRequest) -> CommandAck:
    """Decide and apply one command; the ack names the step it arrived at."""
    step = host.pos.step
    intent = decide(request, host.progress())
    if isinstance(intent, Refusal):
        return CommandAck(request.id, False, intent.reason, step)
    accepted, reason = apply_intent(host, intent)
    return CommandAck(request.id, accepted, reason, step)


def apply_intent(host: CommandHost, intent: Intent) -> tuple[bool, str]:
    """Carry out a command's intent: (accepted, the reason shown to the user)."""
    step = host.pos.step
    match intent:
        case Pause():
            host.pause("command")
            return True, f"paused at step {step}"
        case Resume():
            host.resume()
            return True, f"resumed at step {step}"
        case Advance(message):
            host.advance()
            return True, message
        case TakeCheckpoint():
            path = host.checkpoint("command")
            if path is None:
                return False, "the state is not finite: no checkpoint written; use rollback"
            return True, f"checkpoint written: {path}"
        case Rollback(target, lr_scale):
            try:
                return True, host.rollback(target, lr_scale)
            except RestoreError as exc:
                return False, str(exc)
        case Stop():
            host.stop()
            return True, "stopping: checkpoint, then end"
        case ScaleLr(factor):
            host.scale_lr(factor)
            return True, f"LR scale now {host.pos.lr_scale:g} (lr {host.current_lr():.3g})"
        case ReplaceStages(plan, started, count):
            host.replan(plan, started)
            return True, f"stages {started + 1}..{len(plan.stages)} replaced ({count} stage(s))"
