"""Proof of life for a backend: its process start time and a heartbeat in status.json.

Readers (`status`, `resume`, the cockpit) decide liveness with
`RunStatus.backend_alive`: the pid must exist *and* have the recorded start
time. The heartbeat thread keeps status.json fresh even during a long step,
an operator or a pause, for systems where start times cannot be read.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable

from growcockpit.protocol.rundir import HEARTBEAT_S, process_start_time


def own_start_time() -> float:
    return process_start_time(os.getpid()) or 0.0


class Heartbeat:
    """Calls `beat` every `every` seconds on a daemon thread until `stop`."""

    def __init__(self, beat: Callable[[], None], every: float = HEARTBEAT_S) -> None:
        self._beat = beat
        self._every = every
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self._every + 1)

    def _loop(self) -> None:
        while not self._stopped.wait(self._every):
            # a full disk or a vanished run directory: the next beat tries again
            with contextlib.suppress(OSError):
                self._beat()
