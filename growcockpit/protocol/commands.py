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

COMMANDS: tuple[str, ...] = (
    "pause",
    "resume",
    "advance",
    "checkpoint",
    "stop",
    "edit_stages",
    "set_lr",
)


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
                f"unknown command {self.command!r}; expected one of {', '.join(COMMANDS)}"
            )
        if self.command == "set_lr":
            factor = self.args.get("factor")
            if (
                not isinstance(factor, int | float)
                or isinstance(factor, bool)
                or not math.isfinite(factor)
                or factor <= 0
            ):
                raise CommandError("set_lr needs a positive number: args.factor, e.g. 0.5")
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
    id: str
    accepted: bool
    reason: str = ""
    step: int = 0

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
            step = int(data.get("step") or 0)
        except (TypeError, ValueError):
            raise ValueError(f"ack step is not an integer: {data.get('step')!r}") from None
        return cls(
            id=str(data.get("id", "")),
            accepted=bool(data.get("accepted", False)),
            reason=str(data.get("reason", "")),
            step=step,
        )
