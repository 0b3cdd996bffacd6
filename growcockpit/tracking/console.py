"""The tracked script's console, copied into the run's `backend.log` for the Console tab.

The cockpit's Console tab follows `backend.log` (what an engine run prints). A tracked
run is the user's own process, so `sys.stdout` and `sys.stderr` are wrapped: every write
goes to the terminal first, unchanged, and then to the log. The log is bounded: past
`max_bytes` it is started afresh with a line saying so (the Console tab notices the
truncation and reads on), so a chatty script cannot fill the disk. Output written below
Python (a C library writing to file descriptor 1 or 2) reaches the terminal only.
A failure to write the log never reaches the script: the copy just stops.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

from growcockpit.protocol import safe_fs

MAX_LOG_BYTES = 16 << 20


class _LogFile:
    """The shared, bounded log both streams write to."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.lock = threading.Lock()
        self.fd: int | None = safe_fs.open_append(path)
        self.size = os.fstat(self.fd).st_size

    def write(self, data: bytes) -> None:
        with self.lock:
            fd = self.fd
            if fd is None:
                return
            try:
                if self.size + len(data) > self.max_bytes:
                    os.ftruncate(fd, 0)
                    note = (
                        f"── {self.path.name} passed {self.max_bytes >> 20} MiB: "
                        "started afresh ──\n"
                    ).encode()
                    os.write(fd, note)
                    self.size = len(note)
                    data = data[-self.max_bytes // 2 :]
                os.write(fd, data)
                self.size += len(data)
            except OSError:
                self.fd = None  # a full disk or a removed directory: stop copying
                os.close(fd)

    def close(self) -> None:
        with self.lock:
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None


class _Tee:
    """A text stream that writes through to `inner` and copies into the log."""

    def __init__(self, inner: TextIO, log: _LogFile) -> None:
        self.inner = inner
        self.log = log
        self.copying = True

    def write(self, text: str) -> int:
        written = self.inner.write(text)
        if self.copying and text:
            self.log.write(text.encode("utf-8", "replace"))
        return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding …: the terminal's
        return getattr(self.inner, name)


class ConsoleCopy:
    """Copies the process's stdout and stderr into `path` until `close()`."""

    def __init__(self, path: Path, max_bytes: int = MAX_LOG_BYTES) -> None:
        if sys.stdout is None or sys.stderr is None:  # pythonw, a daemon: nothing to copy
            raise OSError("no console to copy")
        self.log = _LogFile(path, max_bytes)
        self.out = _Tee(sys.stdout, self.log)
        self.err = _Tee(sys.stderr, self.log)
        sys.stdout, sys.stderr = self.out, self.err

    def close(self) -> None:
        """Stop copying; give the streams back unless someone wrapped them after us."""
        for tee, name in ((self.out, "stdout"), (self.err, "stderr")):
            tee.copying = False
            if getattr(sys, name) is tee:
                setattr(sys, name, tee.inner)
        self.log.close()


def copy_console(path: Path) -> ConsoleCopy | None:
    """A `ConsoleCopy` into `path`, or None when the file cannot be opened (said nowhere:
    the run goes on without a Console tab, and the tab says the log is absent)."""
    try:
        return ConsoleCopy(path)
    except (OSError, safe_fs.RunDirError):
        return None
