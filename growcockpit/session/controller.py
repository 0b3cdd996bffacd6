"""Who may steer a run: one controller at a time, any number of read-only viewers.

Design (the simplest one that survives crashes): the cockpit that attaches
first takes an exclusive `flock` on `runs/<id>/controller.lock` and writes
`{"pid", "host", "since"}` into it. Others fail the non-blocking `flock`, read
who holds it, show "read-only: controlled by pid X on HOST", and retry every
couple of seconds, so they take over as soon as the controller leaves. The
kernel drops the lock when the holder exits, crashes or loses its SSH session,
so a stale lock can never block a run. Leaving the cockpit (`q`, closing the
dashboard) releases it explicitly.

The lock is advisory and lives only in the cockpit: the backend answers any
command that reaches its socket, so `growcockpit ctl` in scripts is never
blocked. `flock` is local to one machine (not reliable over NFS), which is
where a run's control socket lives anyway. When the lock file cannot be
created (a read-only run directory), the cockpit controls without a lock and
says so.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from growcockpit.protocol import safe_fs

LOCK_NAME = "controller.lock"


@dataclass(frozen=True)
class Holder:
    pid: int = 0
    host: str = ""
    since: float = 0.0

    def describe(self) -> str:
        if not self.pid:
            return "another cockpit"
        return f"pid {self.pid} on {self.host or 'this host'}"


class ControllerLock:
    """The controller role for one run directory. Plain Python: no Textual."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / LOCK_NAME
        self._fd: int | None = None
        self.problem = ""  # why no lock file could be used ("" when fine)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the role if nobody holds it; True when this cockpit is (now) the controller."""
        if self._fd is not None:
            return True
        try:
            fd = safe_fs.open_fd(self.path, os.O_RDWR | os.O_CREAT)  # never through a link
        except OSError as exc:
            self.problem = f"cannot create {self.path.name} ({exc.strerror})"
            return False
        except safe_fs.UnsafePath as exc:
            self.problem = str(exc)
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd
        self.problem = ""
        return True

    def holder(self) -> Holder | None:
        """Who holds the role (None when this cockpit does, or nobody could be read)."""
        if self._fd is not None:
            return None
        try:
            data = json.loads(safe_fs.read_bytes(self.path, 4096) or b"{}")
        except (OSError, ValueError, RecursionError, safe_fs.UnsafePath):
            return Holder()
        if not isinstance(data, dict):
            return Holder()
        try:
            return Holder(
                int(data.get("pid", 0)), str(data.get("host", "")), float(data.get("since", 0))
            )
        except (TypeError, ValueError):
            return Holder()

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        with contextlib.suppress(OSError):
            os.close(fd)
