"""`attach` to a run that is still starting: wait for its event log, showing its start-up.

`train --detach` returns at once and prints `growcockpit attach RUN`; the backend then
spends seconds importing torch and preparing data before it writes `events.jsonl`.
Attaching in that window used to fail with "events.jsonl: missing". A directory with
a `backend.log` or a "starting" `status.json` is a starting run: its start-up output
is echoed until the event log appears, and a backend that dies first is reported with
the last line of its log. A directory that does not exist yet (a tracked script that has
not reached `growcockpit.track()`) is waited for too, when its parent exists.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from growcockpit.cli.common import UserError
from growcockpit.protocol.rundir import RunDirError, RunPaths, pid_alive, read_status

START_WAIT_S = 600.0  # a first run may train a tokenizer and tokenize its corpus
NO_STATUS_S = 60.0  # a backend.log without status.json this long: the backend never ran
POLL_S = 0.2


@dataclass
class _LogEcho:
    """The lines `backend.log` gained since the last look."""

    path: Path
    offset: int = 0
    last: str = ""

    def new_lines(self) -> list[str]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read(1 << 20)
        except OSError:
            return []
        complete = chunk.rfind(b"\n") + 1
        self.offset += complete
        lines = [ln for ln in chunk[:complete].decode("utf-8", "replace").splitlines() if ln]
        if lines:
            self.last = lines[-1]
        return lines


def is_starting(paths: RunPaths) -> bool:
    """No event log yet, but a backend was launched here."""
    return not paths.events.exists() and (paths.log.exists() or paths.status.exists())


def _dead_reason(paths: RunPaths, echo: _LogEcho, waited: float) -> str | None:
    """Why the starting backend will never write its event log (None: still starting)."""
    try:
        status = read_status(paths.root)
    except RunDirError:
        if waited > NO_STATUS_S:
            return f"no status.json after {waited:.0f} s"
        return None
    if status.state in ("crashed", "stopped", "completed"):
        return f"it {status.state} while starting"
    if status.pid and not pid_alive(status.pid):
        return f"its process {status.pid} is gone"
    return None


def wait_for_dir(run_dir: Path, out: TextIO, timeout: float = START_WAIT_S) -> None:
    """A run directory that does not exist yet: a tracked script creates it when it reaches
    `growcockpit.track()`, often tens of seconds after it was started (imports, data), so
    `attach` waits for it, saying so; Ctrl-C leaves (exit 130)."""
    root = Path(run_dir)
    if root.exists() or not root.parent.is_dir():
        return
    print(
        f"{root}: no run here yet; waiting for it to appear (a script creates it when it "
        "reaches growcockpit.track(); Ctrl-C leaves)…",
        file=out,
        flush=True,
    )
    started = time.monotonic()
    while not root.exists():
        if time.monotonic() - started > timeout:
            raise UserError(
                f"{root}: still no run after {timeout:.0f} s; check the path "
                "(`ls runs/`) and that your script calls growcockpit.track()"
            )
        time.sleep(POLL_S)
    while not (RunPaths(root).status.exists() or RunPaths(root).events.exists()):
        if time.monotonic() - started > timeout:
            return  # a directory that never became a run: the usual check says so
        time.sleep(POLL_S)


def wait_for_start(
    run_dir: Path,
    out: TextIO | None = None,
    timeout: float = START_WAIT_S,
    missing: bool = False,
) -> None:
    """Return once `run_dir` has an event log; a UserError if its backend dies first.
    `missing`: wait for a directory that does not exist yet, too (`attach --wait`, and at a
    terminal; a script gets "no such run directory" at once)."""
    out = sys.stderr if out is None else out
    if missing:
        wait_for_dir(run_dir, out, timeout)
    paths = RunPaths(run_dir)
    if not paths.root.is_dir() or not is_starting(paths):
        return
    print(f"{paths.root}: the run is starting; waiting for its first events…", file=out, flush=True)
    echo = _LogEcho(paths.log)
    started = time.monotonic()
    while not paths.events.exists():
        for line in echo.new_lines():
            print(f"  {line}", file=out, flush=True)
        waited = time.monotonic() - started
        reason = _dead_reason(paths, echo, waited)
        if reason is None and waited > timeout:
            reason = f"still no events.jsonl after {timeout:.0f} s"
        if reason is not None and not paths.events.exists():
            last = f"; last log line: {echo.last}" if echo.last else ""
            raise UserError(
                f"{paths.root}: the run did not start ({reason}){last}; see {paths.log}"
            )
        time.sleep(POLL_S)
    for line in echo.new_lines():
        print(f"  {line}", file=out, flush=True)
