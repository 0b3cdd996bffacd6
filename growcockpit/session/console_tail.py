"""Follow `backend.log` (the backend's stdout and stderr) for the console pane, without Textual.

The log is whatever the backend's libraries print: tracebacks, warnings,
progress bars that redraw with carriage returns, colour escapes. It can grow
without bound and, in a run directory from someone else, be a link, a FIFO
or gigabytes. So the tail keeps only the last `max_lines` lines, reads at most
`max_read` bytes a round (starting near the end of a big file and skipping
ahead when a round falls behind), opens the file only through
`safe_fs.open_read` (no links, no FIFOs or devices, never blocks), and
reopens it every round so that a truncated or replaced log is noticed and
read again from its start. Lines are made safe to draw: escapes stripped,
carriage-return redraws collapsed to their last state, control characters
written as escapes, each cut to `max_chars`.

`poll()` does the disk I/O and belongs in a worker thread; `since(n)` is a
cheap copy under the lock for the view.
"""

from __future__ import annotations

import os
import re
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from growcockpit.protocol import safe_fs
from growcockpit.text.safe_text import terminal_safe

MAX_LINES = 2000
FIRST_READ_BYTES = 256 << 10  # a big log is opened near its end, as `tail` does
MAX_READ_BYTES = 1 << 20  # per round; more than that appended since is skipped, and said
MAX_CHARS = 1000
_ESCAPES = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    rb"|\x1b[@-Z\\-_]"  # two-byte escapes
)


@dataclass(frozen=True)
class ConsoleLine:
    n: int  # 0, 1, 2 … in the order read; survives the buffer dropping old lines
    text: str
    kind: str = "out"  # out | note (the tail's own remark: restarted, skipped, refused)


def clean_line(raw: bytes, max_chars: int = MAX_CHARS) -> str:
    """One log line as drawable text (see the module docstring)."""
    raw = _ESCAPES.sub(b"", raw)
    parts = [p for p in raw.split(b"\r") if p.strip()]  # a progress bar's last redraw
    text = (parts[-1] if parts else b"").decode("utf-8", "replace").expandtabs(4).rstrip()
    text = terminal_safe(text)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


ABSENT_NOTE = (
    "no backend.log here yet: a run started with a foreground `growcockpit train` prints to "
    "its own terminal; runs started with --detach or from the cockpit write backend.log"
)


class ConsoleTail:
    """The last `max_lines` lines of a growing log file (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        *,
        max_lines: int = MAX_LINES,
        first_read: int = FIRST_READ_BYTES,
        max_read: int = MAX_READ_BYTES,
        max_chars: int = MAX_CHARS,
    ) -> None:
        self.path = Path(path)
        self.max_read, self.first_read, self.max_chars = max_read, first_read, max_chars
        self.lock = threading.Lock()
        self._lines: deque[ConsoleLine] = deque(maxlen=max_lines)
        self._next = 0
        self._ident: tuple[int, int] | None = None  # (device, inode) of the file being read
        self._offset = 0
        self._partial = b""
        self._skip_partial = False  # started mid-line: drop bytes up to the first newline
        self.problem = ""  # why the log cannot be read now ("" when it can, or is absent)
        self.absent = False  # no file yet and nothing read: the view says ABSENT_NOTE
        self.restarts = 0  # truncations and replacements seen

    # ---- the view's side -------------------------------------------------------------
    def since(self, n: int) -> list[ConsoleLine]:
        """The kept lines numbered `n` or later."""
        with self.lock:
            if not self._lines or self._lines[-1].n < n:
                return []
            return [ln for ln in self._lines if ln.n >= n]

    @property
    def total(self) -> int:
        """How many lines were ever read (the next line's number)."""
        with self.lock:
            return self._next

    # ---- the worker's side -----------------------------------------------------------
    def poll(self) -> int:
        """Read what was appended (or the new file after a truncation); returns lines added."""
        try:
            fd = safe_fs.open_read(self.path)
        except FileNotFoundError:
            if self._ident is not None:  # removed: whatever comes next is a new file
                self._ident = None
            self.absent = self._next == 0
            return 0
        except (OSError, safe_fs.RunDirError) as exc:
            return self._refuse(str(exc).splitlines()[0] if str(exc) else repr(exc))
        try:
            data = self._read(fd)
        except OSError as exc:
            return self._refuse(f"{self.path}: unreadable ({exc.strerror or exc})")
        finally:
            os.close(fd)
        self.problem = ""
        self.absent = False
        return self._take(data)

    def _refuse(self, problem: str) -> int:
        """Say once why the log cannot be read; the lines already read stay."""
        if problem == self.problem:
            return 0
        self.problem = problem
        return self._add([(problem, "note")])

    def _read(self, fd: int) -> bytes:
        st = os.fstat(fd)
        ident, size = (st.st_dev, st.st_ino), st.st_size
        notes: list[tuple[str, str]] = []
        if self._ident is None:
            fresh = self.restarts == 0 and not self._next
            if not fresh:
                notes.append((f"── {self.path.name} was replaced: reading the new one ──", "note"))
                self.restarts += 1
            self._start(max(0, size - self.first_read) if fresh else 0)
        elif ident != self._ident or size < self._offset:
            what = "replaced" if ident != self._ident else "truncated"
            notes.append((f"── {self.path.name} was {what}: reading it from the start ──", "note"))
            self.restarts += 1
            self._start(0)
        self._ident = ident
        if size - self._offset > self.max_read:
            skipped = size - self.max_read - self._offset
            notes.append((f"… {skipped:,} bytes skipped (the log grew faster than shown)", "note"))
            self._start(size - self.max_read)
        if notes:
            self._add(notes)
        want = max(0, size - self._offset)
        chunks: list[bytes] = []
        while want > 0:
            chunk = os.pread(fd, min(want, 1 << 20), self._offset)
            if not chunk:
                break
            chunks.append(chunk)
            self._offset += len(chunk)
            want -= len(chunk)
        return b"".join(chunks)

    def _start(self, offset: int) -> None:
        self._offset, self._partial, self._skip_partial = offset, b"", offset > 0

    def _take(self, data: bytes) -> int:
        if not data:
            return 0
        data = self._partial + data
        if self._skip_partial:
            cut = data.find(b"\n")
            if cut < 0:
                self._partial = b""
                return 0
            data, self._skip_partial = data[cut + 1 :], False
        pieces = data.split(b"\n")
        self._partial = pieces.pop()
        limit = 4 * self.max_chars
        if len(self._partial) > limit:  # a line without end (a progress bar): show it cut
            pieces.append(self._partial[:limit])
            self._partial = b""
        return self._add([(clean_line(p, self.max_chars), "out") for p in pieces])

    def _add(self, texts: list[tuple[str, str]]) -> int:
        with self.lock:
            for text, kind in texts:
                self._lines.append(ConsoleLine(self._next, text, kind))
                self._next += 1
        return len(texts)
