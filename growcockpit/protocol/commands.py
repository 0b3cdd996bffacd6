"""Commands sent to a running backend over its control socket, and their acks.

Wire format: one JSON object per line. A request is
`{"id": ..., "command": ..., "args": {...}}`; the backend answers each with
`{"id": ..., "accepted": bool, "reason": str, "step": int}` once the training
loop has applied or refused it at a step boundary.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass, field
from typing import Any

from growcockpit.text.safe_text import quoted

COMMANDS: tuple[str, ...] = (
    "pause",
    "resume",
    "advance",
    "checkpoint",
    "stop",
    "edit_stages",
    "set_lr",
    "rollback",
)

# The args each command takes; any other key is refused (a typo such as
# {"stpe": 200} must not be carried out as a plain rollback).
COMMAND_ARGS: dict[str, tuple[str, ...]] = {
    "pause": (),
    "resume": (),
    "advance": (),
    "checkpoint": (),
    "stop": (),
    "edit_stages": ("stages",),
    "set_lr": ("factor",),
    "rollback": ("step", "lr_scale"),
}

# One set_lr factor, and the product of all of them, must stay inside these
# bounds: beyond them an LR is no longer a choice but a typo (1e9, 1e-300) that
# would leave the scale at inf, 0 or NaN for good.
LR_FACTOR_RANGE = (1e-3, 1e3)
LR_SCALE_RANGE = (1e-6, 1e6)


def lr_factor_problem(factor: object) -> str:
    """Why `factor` is not an acceptable set_lr factor ("" when it is).

    The one check behind `ctl set_lr`, the cockpit's prompt and the backend.
    """
    if isinstance(factor, str):
        text = factor
        try:
            factor = float(text)
        except ValueError:
            return f"set_lr needs a positive number such as 0.5, got {quoted(text)}"
    if isinstance(factor, bool) or not isinstance(factor, int | float):
        return "set_lr needs a positive number such as 0.5"
    low, high = LR_FACTOR_RANGE
    if not math.isfinite(factor) or not low <= factor <= high:
        return f"set_lr factor must be a finite positive number from {low:g} to {high:g}, got {factor:g}"
    return ""


def lr_scale_problem(scale: float, factor: float) -> str:
    """Why multiplying the current LR scale by `factor` is refused ("" when it is fine)."""
    new = scale * factor
    low, high = LR_SCALE_RANGE
    if not math.isfinite(new) or not low <= new <= high:
        return (
            f"LR scale would become {new:g} (now {scale:g}); "
            f"the total scale must stay from {low:g} to {high:g}"
        )
    return ""


class CommandError(ValueError):
    """A request that cannot even be sent (unknown command, bad arguments)."""


@dataclass
class CommandRequest:
    command: str
    args: dict[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    def validate(self) -> None:
        if self.command not in COMMANDS:
            raise CommandError(
                f"unknown command {quoted(self.command)}; expected one of {', '.join(COMMANDS)}"
            )
        takes = COMMAND_ARGS[self.command]
        unknown = sorted(str(key)[:40] for key in self.args if key not in takes)
        if unknown:
            raise CommandError(
                f"{self.command} does not take args.{', args.'.join(unknown)}; "
                + (f"it takes args.{', args.'.join(takes)}" if takes else "send no args")
            )
        if self.command == "set_lr":
            factor = self.args.get("factor")
            problem = (
                "set_lr needs args.factor, a positive number such as 0.5"
                if isinstance(factor, str)
                else lr_factor_problem(factor)
            )
            if problem:
                raise CommandError(problem)
        if self.command == "rollback":
            step = self.args.get("step")
            if step is not None and (
                isinstance(step, bool) or not isinstance(step, int) or step < 0
            ):
                raise CommandError(
                    "rollback takes args.step, a checkpoint's step (e.g. 200), or no step for the latest"
                )
            scale = self.args.get("lr_scale")
            if scale is not None and lr_factor_problem(scale):
                low, high = LR_FACTOR_RANGE
                raise CommandError(
                    f"rollback's args.lr_scale must be a finite number from {low:g} to {high:g} "
                    "(the LR scale to train on with, e.g. 0.1), or left out to keep the checkpoint's"
                )
        if self.command == "edit_stages" and not isinstance(self.args.get("stages"), list):
            raise CommandError("edit_stages needs args.stages: a list of stage tables")

    def encode(self) -> str:
        return json.dumps({"id": self.id, "command": self.command, "args": self.args})

    @classmethod
    def decode(cls, line: str) -> CommandRequest:
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CommandError(f"command is not valid JSON: {exc.msg}") from None
        except RecursionError:
            raise CommandError("command JSON is nested too deeply; send a flat object") from None
        if not isinstance(data, dict) or not isinstance(data.get("command"), str):
            raise CommandError('command must be a JSON object with a "command" string')
        args = data.get("args") or {}
        if not isinstance(args, dict):
            raise CommandError('"args" must be a JSON object')
        req = cls(
            command=data["command"], args=args, id=str(data.get("id") or uuid.uuid4().hex[:12])
        )
        req.validate()
        return req


@dataclass
class CommandAck:
    """A command's answer. `step` is the step the training loop took it at; None when the
    loop never saw it (refused by the server: unreadable, timed out, or the run ended
    first), so no answer claims a step the command was never at."""

    id: str
    accepted: bool
    reason: str = ""
    step: int | None = None

    def encode(self) -> str:
        return json.dumps(
            {"id": self.id, "accepted": self.accepted, "reason": self.reason, "step": self.step}
        )

    @classmethod
    def decode(cls, line: str) -> CommandAck:
        """Decode one ack line; raises ValueError when it is not an ack object."""
        data = json.loads(line)
        if not isinstance(data, dict):
            raise ValueError("ack is not a JSON object")
        try:
            step = None if data.get("step") is None else int(data["step"])
        except (TypeError, ValueError):
            raise ValueError(f"ack step is not an integer: {data.get('step')!r}") from None
        return cls(
            id=str(data.get("id", "")),
            accepted=bool(data.get("accepted", False)),
            reason=str(data.get("reason", "")),
            step=step,
        )


def ended_first(command: str) -> str:
    """Why a command reached a run that is ending (a stop accepted, training done, a
    crash), and the way to what it asked for: a rollback of a run that ends is a resume
    from that checkpoint."""
    if command == "rollback":
        way = "`growcockpit resume RUN --from step-N` restores a checkpoint once it has ended"
    else:
        way = "`growcockpit resume RUN` starts it again once it has ended"
    return f"the run is ending (stopped, finished or crashed) and applies no more commands; {way}"
