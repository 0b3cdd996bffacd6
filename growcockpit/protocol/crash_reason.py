"""Why a run ended badly, in one line: for `growcockpit status` of a crashed run.

The backend records a crash as an `error` event and a `run_finished` event with
the message; a backend killed outright (OOM killer, SIGKILL) records nothing, and
then the last line of `backend.log` is the best witness. Only the tails of the
files are read, so a long run's log costs no more than a short one's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from growcockpit.protocol import safe_fs
from growcockpit.protocol.rundir import RunPaths

TAIL_BYTES = 256 * 1024
NO_REASON = "no reason recorded (killed from outside? the OOM killer?)"


def _tail(path: Path) -> list[str]:
    try:
        with os.fdopen(safe_fs.open_read(path), "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - TAIL_BYTES))
            data = fh.read(TAIL_BYTES)
    except (OSError, safe_fs.UnsafePath):
        return []
    return [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]


def _event_reason(line: str) -> str | None:
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):  # a hostile line is skipped, never a traceback
        return None
    if not isinstance(event, dict):
        return None
    message = event.get("message")
    if event.get("type") == "error" or (
        event.get("type") == "run_finished" and event.get("status") == "crashed"
    ):
        return str(message)[:300] if message else None
    return None


def crash_reason(paths: RunPaths) -> str:
    """The recorded reason of the crash, else the log's last line, else NO_REASON."""
    for line in reversed(_tail(paths.events)):
        reason = _event_reason(line)
        if reason:
            return reason
    log = _tail(paths.log)
    return f"backend.log ends: {log[-1].strip()[:300]}" if log else NO_REASON
