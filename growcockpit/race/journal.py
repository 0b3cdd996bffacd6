"""`study.journal`, the race's Optuna journal, read and appended as untrusted input.

Optuna's own file backend follows a link (a line gets appended to the link's target),
blocks on a FIFO, and turns a damaged line into a 30-line traceback. This backend keeps
Optuna's file format and replaces only the file handling:

- opened as `safe_fs` opens a run directory's files: never through a link, never
  blocking on a FIFO or device, at most MAX_JOURNAL_BYTES;
- appended under an flock in `locks/` (one write per batch of lines);
- every line checked before Optuna sees it: JSON of bounded depth, an op code a race
  writes, each field of the type Optuna's replay expects. A bad line is one error
  naming its number and the way out;
- a last line without its newline is a write in progress (skipped) or, when the race
  starts and holds the lock, what a crash left: `drop_torn_tail` cuts it and says so.

Moving the journal aside is always a way out: the race measures every rung again from
its runs' own event logs, which hold every evaluation, so nothing is trained twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from optuna.exceptions import OptunaError
from optuna.storages.journal import BaseJournalBackend

from growcockpit.plan.source_files import json_depth
from growcockpit.protocol import safe_fs
from growcockpit.protocol.safe_fs import UnsafePath
from growcockpit.race.race_dir import JOURNAL_FILE, LOCKS, RaceDirError, subdir, unsafe

MAX_JOURNAL_BYTES = 64 << 20
MAX_LINE_BYTES = 1 << 20
MAX_DEPTH = 16
LOCK_NAME = "journal.lock"
STATES = range(5)  # optuna TrialState: RUNNING, COMPLETE, PRUNED, FAIL, WAITING
DIRECTIONS = range(3)  # optuna StudyDirection: NOT_SET, MINIMIZE, MAXIMIZE


class JournalError(RaceDirError):
    """A journal that cannot be used as it is: one line, the line at fault and the way out."""


def way_out(path: Path | str) -> str:
    return (
        f"move it aside (mv {path} {path}.bad) and run the race again: every rung is "
        "measured again from the runs' own logs, nothing is trained twice"
    )


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _time(v: object) -> bool:
    if not isinstance(v, str) or len(v) > 64:
        return False
    try:
        datetime.fromisoformat(v).astimezone()
    except (ValueError, OverflowError, OSError):
        return False
    return True


def _one_attr(v: object) -> bool:
    return isinstance(v, dict) and len(v) == 1 and all(isinstance(k, str) for k in v)


CHECKS: dict[str, Callable[[object], bool]] = {
    "int": _int,
    "str": lambda v: isinstance(v, str),
    "time": _time,
    "time?": lambda v: v is None or _time(v),
    "num?": lambda v: v is None or _num(v),
    "nums?": lambda v: v is None or (isinstance(v, list) and len(v) == 1 and _num(v[0])),
    "state": lambda v: _int(v) and v in STATES,
    "step": lambda v: _int(v) and 0 <= v < 1 << 31,  # type: ignore[operator]
    "num": _num,
    "attr": _one_attr,
    "attrs": lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),
    "dirs": lambda v: isinstance(v, list) and len(v) == 1 and _int(v[0]) and v[0] in DIRECTIONS,
    "steps": lambda v: (
        isinstance(v, dict) and all(k.isdigit() and len(k) < 10 and _num(x) for k, x in v.items())
    ),
}
# op code: its name, its required fields and its optional ones (field: kind in CHECKS)
OPS: dict[int, tuple[str, dict[str, str], dict[str, str]]] = {
    0: ("create study", {"study_name": "str", "directions": "dirs"}, {}),
    1: ("delete study", {"study_id": "int"}, {}),
    2: ("study user attribute", {"study_id": "int", "user_attr": "attr"}, {}),
    3: ("study system attribute", {"study_id": "int", "system_attr": "attr"}, {}),
    4: (
        "create trial",
        {"study_id": "int", "datetime_start": "time?"},
        {
            "state": "state",
            "value": "num?",
            "values": "nums?",
            "datetime_complete": "time",
            "user_attrs": "attrs",
            "system_attrs": "attrs",
            "intermediate_values": "steps",
        },
    ),
    6: (
        "trial state",
        {"trial_id": "int", "state": "state", "values": "nums?"},
        {"datetime_start": "time", "datetime_complete": "time"},
    ),
    7: ("intermediate value", {"trial_id": "int", "step": "step", "intermediate_value": "num"}, {}),
    8: ("trial user attribute", {"trial_id": "int", "user_attr": "attr"}, {}),
    9: ("trial system attribute", {"trial_id": "int", "system_attr": "attr"}, {}),
}


def check_line(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """The log a journal line holds, or None and why it is not one a race writes."""
    if len(raw) > MAX_LINE_BYTES:
        return None, f"{len(raw):,} bytes, over the {MAX_LINE_BYTES:,}-byte limit"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    depth = json_depth(text)
    if depth > MAX_DEPTH:
        return None, f"JSON nested {depth:,} deep (at most {MAX_DEPTH})"
    try:
        log = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON ({str(exc)[:60]})"
    if not isinstance(log, dict):
        return None, "not a JSON object"
    op = log.get("op_code")
    if not _int(op) or op not in OPS:
        return None, f"op code {str(op)[:20]}, not one a race writes (known: {sorted(OPS)})"
    name, required, optional = OPS[op]
    if not isinstance(log.get("worker_id"), str):
        return None, f"{name}: no worker_id"
    for field in required:
        if field not in log:
            return None, f"{name}: field {field!r} missing"
    for field, kind in (required | optional).items():
        if field in log and not CHECKS[kind](log[field]):
            return None, f"{name}: field {field!r} = {str(log[field])[:40]!r} is not a {kind}"
    if op == 6 and not _state_times(log):
        return None, f"{name}: no time for state {log['state']}"
    return log, ""


def _state_times(log: dict[str, Any]) -> bool:
    """Optuna's replay reads datetime_start of a RUNNING state, datetime_complete of a
    finished one."""
    if log["state"] == 0:
        return "datetime_start" in log
    if log["state"] in (1, 2, 3):
        return "datetime_complete" in log
    return True


@contextlib.contextmanager
def replay_errors(path: Path | str = JOURNAL_FILE) -> Iterator[None]:
    """Optuna's refusals of well-formed lines a race never wrote (a deleted study, a trial
    finished behind the race's back) as one JournalError."""
    try:
        yield
    except (OptunaError, KeyError) as exc:
        raise JournalError(
            f"{path}: Optuna refuses what it holds ({type(exc).__name__}: {str(exc)[:80]}); "
            f"{way_out(path)}"
        ) from None


class RaceJournal(BaseJournalBackend):
    """Optuna's journal file backend, with the file touched only as `safe_fs` allows."""

    def __init__(self, race_dir: Path) -> None:
        self.race_dir = race_dir
        self.path = race_dir / JOURNAL_FILE
        self._offsets: dict[int, int] = {0: 0}
        try:
            os.close(safe_fs.open_append(self.path))  # made if absent; a link refused
        except UnsafePath as exc:
            raise unsafe(exc) from None

    def _lines(self, start: int) -> Iterator[tuple[int, bytes]]:
        """(byte offset after, line) of each newline-ended line from `start`."""
        try:
            fd = safe_fs.open_read(self.path)
        except UnsafePath as exc:
            raise unsafe(exc) from None
        with os.fdopen(fd, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_JOURNAL_BYTES:
                raise JournalError(
                    f"{self.path}: {size:,} bytes, over the {MAX_JOURNAL_BYTES:,}-byte limit "
                    f"of a race's journal; {way_out(self.path)}"
                )
            fh.seek(start)
            at = start
            for line in fh:
                if not line.endswith(b"\n"):
                    return  # a write in progress (or a torn line: drop_torn_tail)
                at += len(line)
                yield at, line

    def read_logs(self, log_number_from: int) -> Iterator[dict[str, Any]]:
        known = max(n for n in self._offsets if n <= log_number_from)
        number = known
        for after, line in self._lines(self._offsets[known]):
            log, why = check_line(line)
            if log is None:
                raise JournalError(
                    f"{self.path}: line {number + 1}: {why}; the journal is damaged: "
                    f"{way_out(self.path)}"
                )
            number += 1
            self._offsets[number] = after
            if number > log_number_from:
                yield log

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        data = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs)
        with self.locked():
            try:
                fd = safe_fs.open_append(self.path)
            except UnsafePath as exc:
                raise unsafe(exc) from None
            try:
                os.write(fd, data.encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)

    def locked(self) -> _Flock:
        subdir(self.race_dir, LOCKS)
        return _Flock(self.race_dir / LOCKS / LOCK_NAME)

    def drop_torn_tail(self) -> str | None:
        """Cut a last line without its newline (what a crash mid-write leaves), under the
        journal lock so that no write is in progress; the line saying so, or None."""
        with self.locked():
            try:
                fd = safe_fs.open_fd(self.path, os.O_RDWR)
            except UnsafePath as exc:
                raise unsafe(exc) from None
            try:
                size = os.fstat(fd).st_size
                if size == 0 or size > MAX_JOURNAL_BYTES or os.pread(fd, 1, size - 1) == b"\n":
                    return None  # whole lines (an oversized journal: read_logs refuses it)
                cut = _after_last_newline(fd, size)
                os.ftruncate(fd, cut)
                os.fsync(fd)
            finally:
                os.close(fd)
        return (
            f"{self.path}: dropped a torn last line ({size - cut:,} bytes without a newline: "
            "a write cut off by a crash); what it held is measured again"
        )


def _after_last_newline(fd: int, size: int) -> int:
    """The offset just after the file's last newline (0 when it has none)."""
    end = size
    while end > 0:
        start = max(0, end - (1 << 16))
        at = os.pread(fd, end - start, start).rfind(b"\n")
        if at >= 0:
            return start + at + 1
        end = start
    return 0


class _Flock:
    """An exclusive flock on a file of `locks/`, opened never through a link."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> None:
        try:
            self.fd = safe_fs.open_fd(self.path, os.O_RDWR | os.O_CREAT)
        except UnsafePath as exc:
            raise unsafe(exc) from None
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *_: object) -> None:
        os.close(self.fd)
