"""Control commands at a step boundary: take them, agree on them, apply their intents.

`commands.decide` says what a command means (an intent, or a refusal);
`apply_intent` is the one place where an intent changes the loop's state.
Both work on a `CommandHost`, the few parts of the trainer that commands may
change, so this module needs no Trainer (backend/loop/engine.py is the host).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import torch

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
from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.dist.distributed import DistContext
from growcockpit.backend.state.checkpoint import TrainerPosition
from growcockpit.backend.state.restore import RestoreError
from growcockpit.plan.types import Plan
from growcockpit.protocol.commands import CommandAck, CommandRequest


class CommandHost(Protocol):
    pos: TrainerPosition
    dist: DistContext
    device: torch.device
    report: RunReporter
    paused: bool
    lr_raised_at: int | None
    advance_now: bool
    stopping: bool
    stop_requested: bool

    def progress(self) -> Progress: ...

    def current_lr(self) -> float: ...

    def checkpoint(self, reason: str) -> Path | None: ...

    def rollback(self, step: int | None, lr_scale: float | None = None) -> str: ...

    def replan(self, plan: Plan, from_stage: int) -> None: ...


def handle_commands(host: CommandHost, block: bool) -> None:
    """Apply queued commands on every rank at this step boundary.

    While paused or waiting, rank 0 blocks briefly on the socket and the
    other ranks wait for it inside the agreement collective.
    """
    pending = host.report.take_commands(block, alone=not host.dist.enabled)
    local = [p.request for p in pending]
    requests, stop = host.dist.agree_commands(local, host.stop_requested, host.device)
    if stop and not host.stopping:
        host.stopping = True
        host.report.warn("stop requested by signal: checkpoint, then end", step=host.pos.step)
    for i, request in enumerate(requests):
        ack = run_command(host, request)
        if i < len(pending):
            pending[i].reply(ack)
        host.report.command_done(request, ack, host.progress())


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
            host.paused = True
            host.report.paused(host.progress(), reason="command")
            return True, f"paused at step {step}"
        case Resume():
            host.paused = False
            host.report.resumed(host.progress())
            return True, f"resumed at step {step}"
        case Advance(message):
            host.advance_now = True
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
            host.stopping = True
            return True, "stopping: checkpoint, then end"
        case ScaleLr(factor):
            host.pos.lr_scale *= factor
            if factor > 1:
                host.lr_raised_at = host.pos.step
            return True, f"LR scale now {host.pos.lr_scale:g} (lr {host.current_lr():.3g})"
        case ReplaceStages(plan, started, count):
            host.replan(plan, started)
            return True, f"stages {started + 1}..{len(plan.stages)} replaced ({count} stage(s))"
