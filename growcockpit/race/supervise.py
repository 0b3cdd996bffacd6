"""A race's training processes live no longer than the race, and a re-run stops the ones
a killed race left behind.

- Tied to the race: on Linux each backend asks the kernel for SIGTERM when the race
  worker that started it dies (`PR_SET_PDEATHSIG`, even for SIGKILL); SIGTERM is the
  backend's `stop`, so it checkpoints at its next step and ends. A backend started after
  its race already died stops at once.
- Found again: the worker records each backend's pid and start time in
  `<race>/pids/<run>.json`, and gives it `GROWCOCKPIT_RACE_RUN=<its run directory>` in
  its environment. A re-run (or any worker taking a candidate whose lock is free, so no
  live worker trains it) signals a recorded pid only once it is proven to be that very
  backend: alive, started at the recorded time, a `growcockpit` command line, and that
  environment entry naming this run directory. Anything else is left alone.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from growcockpit.protocol import safe_fs
from growcockpit.protocol.rundir import pid_alive, process_start_time
from growcockpit.protocol.safe_fs import UnsafePath
from growcockpit.race.race_dir import PIDS, RaceDirError, race_root, subdir, unsafe, write_file

ENV_KEY = "GROWCOCKPIT_RACE_RUN"
PR_SET_PDEATHSIG = 1
STOP_WAIT_S = 120.0  # a checkpoint of a big model takes a while; then SIGKILL
KILL_WAIT_S = 10.0
MAX_RECORD_BYTES = 4096


def _record(run_dir: Path) -> Path:
    return race_root(run_dir) / PIDS / f"{run_dir.name}.json"


def run_env(run_dir: Path) -> dict[str, str]:
    """The environment entry that marks a backend as this run's, for the proof later."""
    return {ENV_KEY: str(run_dir.resolve())}


def die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` that has the kernel SIGTERM the child when this thread's process dies
    (Linux); None where there is no such call."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    parent = os.getpid()

    def arm() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the race died before the call: stop now
            os.kill(os.getpid(), signal.SIGTERM)

    return arm


def record(run_dir: Path, pid: int) -> None:
    """Note the backend's pid and start time in `<race>/pids/`."""
    subdir(race_root(run_dir), PIDS)
    data = {"pid": pid, "started": process_start_time(pid)}
    write_file(_record(run_dir), json.dumps(data).encode("utf-8"))


def forget(run_dir: Path) -> None:
    try:
        safe_fs.remove_file(_record(run_dir))
    except UnsafePath as exc:
        raise unsafe(exc) from None


def _read(run_dir: Path) -> tuple[int, float | None] | None:
    """The recorded (pid, start time), or None when there is no usable record."""
    try:
        data = json.loads(safe_fs.read_bytes(_record(run_dir), MAX_RECORD_BYTES))
    except FileNotFoundError:
        return None
    except UnsafePath as exc:
        raise unsafe(exc) from None
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    pid, started = data.get("pid"), data.get("started")
    if not isinstance(pid, int) or isinstance(pid, bool):
        return None
    if not (started is None or isinstance(started, float | int)):
        return None
    return pid, None if started is None else float(started)


def _proc(pid: int, name: str) -> bytes:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as fh:
            return fh.read(1 << 20)
    except OSError:
        return b""


def is_race_backend(pid: int, started: float | None, run_dir: Path) -> bool:
    """Is `pid` provably the backend this race started for `run_dir` (and still running)?"""
    if started is None or not pid_alive(pid):
        return False
    now = process_start_time(pid)
    if now is None or abs(now - started) >= 1.0:
        return False  # the pid was reused: someone else's process
    argv = _proc(pid, "cmdline").split(b"\0")
    if b"growcockpit" not in argv:
        return False
    entry = f"{ENV_KEY}={run_dir.resolve()}".encode()
    return entry in _proc(pid, "environ").split(b"\0")


def _gone(pid: int, started: float) -> bool:
    now = process_start_time(pid)
    return not pid_alive(pid) or now is None or abs(now - started) >= 1.0


def stop_orphan(run_dir: Path, say: Callable[[str], None], wait_s: float = STOP_WAIT_S) -> bool:
    """Stop the backend a killed race left training `run_dir`, if the record proves one
    (SIGTERM: it checkpoints and ends; SIGKILL after `wait_s`). Whether one was stopped."""
    found = _read(run_dir)
    if found is None:
        return False
    pid, started = found
    if not is_race_backend(pid, started, run_dir):
        forget(run_dir)
        return False
    assert started is not None
    say(f"{run_dir.name}: stopping its backend (pid {pid}), left training by a killed race")
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while not _gone(pid, started) and time.monotonic() < deadline:
        time.sleep(0.2)
    if not _gone(pid, started):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + KILL_WAIT_S
        while not _gone(pid, started):
            if time.monotonic() > deadline:
                raise RaceDirError(
                    f"{run_dir}: its backend (pid {pid}) outlived SIGKILL for {KILL_WAIT_S:g} s "
                    "(stuck in the kernel?); run the race again once it is gone"
                )
            time.sleep(0.1)
    forget(run_dir)
    return True


def is_growcockpit(pid: int) -> bool:
    """Does process `pid` run growcockpit (what a status.json's pid must be to be waited on)?"""
    return b"growcockpit" in _proc(pid, "cmdline").split(b"\0")
