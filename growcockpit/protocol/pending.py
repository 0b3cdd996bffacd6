"""A decoded command waiting for the training loop's answer (the first reply wins)."""

from __future__ import annotations

import dataclasses
import threading
import time

from .commands import CommandAck, CommandRequest


class PendingCommand:
    """A decoded request waiting for the training loop's answer.

    The first `reply` wins; later ones (and replies after the request expired
    or the server closed) are ignored and return False.
    """

    def __init__(self, request: CommandRequest, client: int = 0) -> None:
        self.request = request
        self.client = client
        self.received = time.time()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._ack: CommandAck | None = None

    def reply(self, ack: CommandAck) -> bool:
        """Answer the client; returns False when it was already answered."""
        with self._lock:
            if self._ack is not None:
                return False
            if ack.id != self.request.id:
                ack = dataclasses.replace(ack, id=self.request.id)
            self._ack = ack
        self._done.set()
        return True

    def accept(self, step: int = 0, reason: str = "") -> bool:
        return self.reply(CommandAck(self.request.id, accepted=True, reason=reason, step=step))

    def refuse(self, reason: str, step: int | None = None) -> bool:
        return self.reply(CommandAck(self.request.id, accepted=False, reason=reason, step=step))

    @property
    def replied(self) -> bool:
        return self._done.is_set()

    @property
    def ack(self) -> CommandAck | None:
        return self._ack

    def wait_reply(self, timeout: float | None = None) -> CommandAck | None:
        self._done.wait(timeout)
        return self._ack

    def __repr__(self) -> str:
        return f"PendingCommand({self.request!r}, client={self.client}, replied={self.replied})"
