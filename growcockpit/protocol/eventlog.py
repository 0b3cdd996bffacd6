"""Writing and tailing `events.jsonl`, the append-only log of a run.

One writer (the backend's rank 0) appends whole lines with a single `os.write`
on an `O_APPEND` descriptor, so a reader can only ever see a complete line or
a torn *last* line (the writer is mid-write, or died mid-write). Readers never
consume a line until its newline is there, and skip complete lines that do not
decode, so a crash can cost at most one event and never blocks the rest.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from . import safe_fs
from .event_codec import decode_event, encode_event
from .events import Event

_CHUNK = 4 << 20  # bytes read per syscall when tailing
_SCAN_CHUNK = 64 << 10  # bytes read per step when scanning back for the last seq


class EventLog:
    """Append-only writer of `events.jsonl`; safe to share between threads.

    Opening an existing log (a resumed run) continues `seq` after its last
    valid event; a torn last line left by a dead writer is first terminated,
    so it becomes one isolated bad line that readers skip.
    """

    def __init__(self, path: Path, fsync: bool = False) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._lock = threading.Lock()
        self._torn = False  # a failed write may have left a partial line
        self._fd: int | None = safe_fs.open_append(self.path)  # never through a planted link
        try:
            self._seq = 0
            size = os.fstat(self._fd).st_size
            if size:
                with os.fdopen(safe_fs.open_read(self.path), "rb") as fh:
                    self._seq = _last_seq(fh, size)
                    fh.seek(size - 1)
                    if fh.read(1) != b"\n":
                        _write_all(self._fd, b"\n")
        except BaseException:
            os.close(self._fd)
            self._fd = None
            raise

    @property
    def last_seq(self) -> int:
        """The `seq` of the last event written (0 for an empty log)."""
        return self._seq

    @property
    def closed(self) -> bool:
        return self._fd is None

    def append(self, event: Event) -> Event:
        """Number, timestamp and write one event; returns the same object."""
        with self._lock:
            if self._fd is None:
                raise ValueError(f"{self.path}: event log is closed")
            seq = self._seq + 1
            old_seq = event.seq
            event.seq = seq
            if event.t == 0:
                event.t = time.time()
            try:
                line = encode_event(event) + "\n"
            except BaseException:
                event.seq = old_seq
                raise
            data = line.encode("utf-8")
            if self._torn:
                data = b"\n" + data
            try:
                _write_all(self._fd, data)
            except BaseException:
                self._torn = True
                raise
            self._torn = False
            self._seq = seq
            if self.fsync:
                os.fsync(self._fd)
        return event

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                fd, self._fd = self._fd, None
                os.close(fd)

    def __enter__(self) -> EventLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            try:  # noqa: SIM105 - no imports needed at interpreter shutdown
                os.close(fd)
            except OSError:
                pass


def _write_all(fd: int, data: bytes) -> None:
    # One write call per line; a regular file only returns short on a full disk
    # or a signal, and then the rest follows at once.
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _last_seq(fh: BinaryIO, end: int) -> int:
    """`seq` of the last line before `end` that is a JSON object with an int seq.

    Reads backwards in chunks, so resuming a long run does not re-read its log.
    """
    pos = end
    carry = b""  # the start of a line whose beginning lies before `pos`
    while pos > 0:
        start = max(0, pos - _SCAN_CHUNK)
        fh.seek(start)
        lines = (fh.read(pos - start) + carry).split(b"\n")
        if start > 0:
            carry = lines.pop(0)  # may begin mid-line: complete it with the next chunk
        for line in reversed(lines):
            seq = _seq_of(line)
            if seq is not None:
                return seq
        pos = start
    return 0


def _seq_of(line: bytes) -> int | None:
    line = line.strip()
    if not line:
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):  # a hostile line is skipped, never a traceback
        return None
    if not isinstance(data, dict):
        return None
    seq = data.get("seq")
    if isinstance(seq, bool) or not isinstance(seq, int):
        return None
    return seq


class EventTail:
    """Incremental reader of `events.jsonl`; any number may follow one run.

    Keeps a byte offset and returns, on each call, the complete events that
    were appended since the last one. A last line without its newline (being
    written now, or torn by a crash) is left for a later call. A complete line
    that does not decode is skipped and counted in `skipped`. If the file
    shrinks or is replaced, reading restarts from its beginning and `resets`
    counts up, so a consumer that keeps derived state knows to rebuild it.
    """

    def __init__(self, path: Path, start_offset: int = 0) -> None:
        self.path = Path(path)
        self.offset = start_offset
        self.skipped = 0
        self.resets = 0
        self._identity: tuple[int, int] | None = None

    def read_new(self, max_events: int | None = None) -> list[Event]:
        """Events appended since the last call (at most `max_events`)."""
        events: list[Event] = []
        while max_events is None or len(events) < max_events:
            want = None if max_events is None else max_events - len(events)
            lines = self.read_lines(want)
            if not lines:
                break
            for line in lines:
                try:
                    events.append(decode_event(line))
                except (ValueError, TypeError, RecursionError):
                    self.skipped += 1
        return events

    def read_lines(self, max_lines: int | None = None) -> list[bytes]:
        """The complete, non-blank lines appended since the last call, undecoded.

        For readers that decode in bulk (the cockpit attaching to a long run);
        such a reader counts the lines it cannot decode in `skipped` itself.
        """
        if max_lines is not None and max_lines <= 0:
            return []
        try:
            # a FIFO or a device here would block or never end: refused (UnsafePath)
            fh = os.fdopen(safe_fs.open_read(self.path), "rb")
        except FileNotFoundError:
            return []  # the run has not started writing yet
        out: list[bytes] = []
        with fh:
            st = os.fstat(fh.fileno())
            identity = (st.st_dev, st.st_ino)
            replaced = self._identity is not None and identity != self._identity
            if replaced or st.st_size < self.offset:
                self.offset = 0
                self.skipped = 0
                self.resets += 1
            self._identity = identity
            if st.st_size == self.offset:
                return out
            fh.seek(self.offset)
            pos = self.offset  # file offset of the first byte of `carry`
            carry = b""
            while True:
                chunk = fh.read(_CHUNK)
                if not chunk:
                    break
                lines = (carry + chunk if carry else chunk).split(b"\n")
                carry = lines.pop()  # no newline yet: not ours to consume
                for line in lines:
                    pos += len(line) + 1
                    if not line.strip():
                        continue
                    out.append(line)
                    if max_lines is not None and len(out) >= max_lines:
                        self.offset = pos
                        return out
            self.offset = pos
        return out


def read_all(path: Path) -> list[Event]:
    """Every complete, decodable event of a log ([] when it does not exist)."""
    return EventTail(Path(path)).read_new()
