"""The first second of a backend: signal handlers and status.json before the heavy imports.

Importing torch and transformers takes seconds. A SIGTERM in that window
used to kill the backend silently (no status.json, empty log). So the CLI
calls `guard_startup` before importing anything heavy: it writes a
"starting" status.json and installs handlers that turn SIGTERM/SIGINT/SIGHUP
into `StartupInterrupted`; `end_interrupted` then records the run as
"stopped" with one log line. Once data loading begins, signals are only
recorded (`defer_signals`) so no half-written file is left; the trainer picks
the request up and stops at its first step boundary. This module imports
only the standard library and `protocol`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from growcockpit.protocol.run_safety import check_run_dir
from growcockpit.protocol.rundir import RunPaths, RunStatus, process_start_time, write_status
from growcockpit.protocol.safe_fs import DIR_MODE

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class StartupInterrupted(BaseException):
    """A stop signal arrived before training began (BaseException: no `except Exception` eats it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _Deferred:
    signum: int | None = None


deferred = _Deferred()


def guard_startup(run_dir: Path, plan_name: str, num_stages: int, total_steps: int) -> None:
    """Install the start-up handlers and write status.json ("starting", this pid)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, _raise)
    if os.environ.get("RANK", "0") != "0":
        return
    paths = RunPaths(run_dir)
    paths.root.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    check_run_dir(paths.root, writing=True)  # UnsafePath: nothing written yet, one line
    write_status(
        paths.status,
        RunStatus(
            run_id=paths.root.name,
            plan_name=plan_name,
            state="starting",
            num_stages=num_stages,
            total_steps=total_steps,
            pid=os.getpid(),
            pid_started=process_start_time(os.getpid()) or 0.0,
            started=time.time(),
            phase="imports",  # what Home shows until the backend's own phase events
            phase_since=time.time(),
        ),
    )


def defer_signals() -> None:
    """From here on a stop signal is only recorded; the trainer acts on it at a step boundary."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, _record)


def end_interrupted(run_dir: Path, exc: StartupInterrupted) -> int:
    """Mark the run stopped and say so in one line; the exit code of a clean stop."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    paths = RunPaths(run_dir)
    if os.environ.get("RANK", "0") == "0" and paths.root.is_dir():
        try:
            from growcockpit.protocol.rundir import read_status

            status = read_status(paths.root)
        except Exception:
            status = RunStatus(run_id=paths.root.name, pid=os.getpid())
        status.state = "stopped"
        with contextlib.suppress(OSError):
            write_status(paths.status, status)
    print(
        f"growcockpit: stopped by {signal.Signals(exc.signum).name} during start-up, "
        "before training began; nothing was trained",
        file=sys.stderr,
        flush=True,
    )
    return 0


def _raise(signum: int, frame: FrameType | None) -> None:
    raise StartupInterrupted(signum)


def _record(signum: int, frame: FrameType | None) -> None:
    deferred.signum = signum
