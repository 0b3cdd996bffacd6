"""status.json, written from the events as `protocol.status_fold` folds them."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from growcockpit.protocol.events import Event
from growcockpit.protocol.rundir import RunStatus, write_status
from growcockpit.protocol.status_fold import StatusFold

STATUS_EVERY_S = 1.0


class StatusWriter:
    """A sink: folds every event, writes at once on a change of state and at most once a
    second for steps; `beat` rewrites it as it is (the heartbeat thread)."""

    def __init__(self, path: Path, status: RunStatus) -> None:
        self.path = path
        self.fold = StatusFold(status)
        self._last = 0.0
        self._lock = threading.Lock()

    @property
    def status(self) -> RunStatus:
        return self.fold.status

    def __call__(self, event: Event) -> None:
        with self._lock:
            urgent = self.fold.apply(event)
            now = time.time()
            if urgent or now - self._last >= STATUS_EVERY_S:
                self._last = now
                write_status(self.path, self.fold.status)

    def beat(self) -> None:
        with self._lock:
            write_status(self.path, self.fold.status)
