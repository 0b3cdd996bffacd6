"""Launch a backend, tail its events and send it commands: plain Python, no Textual.

The cockpit talks to a run only through its run directory (events.jsonl,
status.json) and its control socket, so any number of cockpits can attach and
closing one never touches training.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

from growcockpit.protocol import ControlError, EventTail, safe_fs, send_command
from growcockpit.protocol.commands import CommandAck, CommandRequest
from growcockpit.protocol.events import Event
from growcockpit.protocol.launch import GLIBC_TUNABLES as GLIBC_TUNABLES
from growcockpit.protocol.launch import spawn_backend
from growcockpit.protocol.rundir import (
    RunDirError,
    RunPaths,
    new_run_dir,
    read_status,
    run_dir_name,
)

# cuts malloc churn (sys time 29.9 s -> 6.2 s) in the training process.

# Backends this process started: kept so their exit status is collected (no zombies)
# and so `backend_alive()` knows without waiting for status.json.
_LAUNCHED: dict[Path, subprocess.Popen[bytes]] = {}


class LaunchError(Exception):
    """The backend could not be started; the message says why."""


def plan_name(plan_path: Path) -> str:
    """The plan's `name` key (falls back to the file stem), safe for a directory name."""
    try:
        with open(plan_path, "rb") as fh:
            name = str(tomllib.load(fh).get("name") or "")
    except (OSError, tomllib.TOMLDecodeError):
        name = ""
    name = name or Path(plan_path).stem
    return run_dir_name(name)


def backend_command(
    plan_path: Path,
    run_dir: Path,
    python: str | None = None,
    device: str = "",
    nproc: int = 1,
) -> list[str]:
    """`python -m growcockpit train PLAN --run-dir DIR [--device D] [--nproc-per-node N]`.

    `--nproc-per-node` is passed only for N > 1 (DDP)."""
    cmd = [
        python or sys.executable,
        "-m",
        "growcockpit",
        "train",
        str(plan_path),
        "--run-dir",
        str(run_dir),
    ]
    if device:
        cmd += ["--device", device]
    if nproc > 1:
        cmd += ["--nproc-per-node", str(nproc)]
    return cmd


class RunClient:
    """One run directory seen from the cockpit."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.paths = RunPaths(self.run_dir)
        self._tail = EventTail(self.paths.events)

    # ---- launching -------------------------------------------------------
    @staticmethod
    def launch(
        plan_path: Path,
        runs_root: Path,
        *,
        python: str | None = None,
        now: Callable[[], float] = time.time,
        device: str = "",
        nproc: int = 1,
    ) -> Path:
        """Create `runs_root/<plan-name>-<YYYYmmdd-HHMMSS>/` and start the backend in it.

        The backend gets its own session (survives the cockpit and SSH loss),
        no stdin, and stdout/stderr in `backend.log`. Returns the run directory.
        """
        plan_path = Path(plan_path)
        if not plan_path.is_file():
            raise LaunchError(f"{plan_path}: no such plan file")
        try:
            run_dir = new_run_dir(Path(runs_root), plan_name(plan_path), now())
        except (RunDirError, OSError) as exc:
            raise LaunchError(f"{runs_root}: cannot create a run directory ({exc})") from None
        try:
            command = backend_command(plan_path.resolve(), run_dir, python, device, nproc)
            proc = spawn_backend(
                command[3:], RunPaths(run_dir).log, python=command[0], cwd=os.getcwd()
            )
        except OSError as exc:
            raise LaunchError(f"cannot start the backend: {exc}") from None
        _LAUNCHED[run_dir] = proc
        return run_dir

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The backend's process when this cockpit launched it."""
        return _LAUNCHED.get(self.run_dir.resolve())

    # ---- watching --------------------------------------------------------
    @property
    def tail(self) -> EventTail:
        """The reader of events.jsonl (its offset is where this client has read to)."""
        return self._tail

    def read_new(self, max_events: int | None = None) -> list[Event]:
        """Events appended since the last call (all of them the first time)."""
        return self._tail.read_new(max_events=max_events)

    def backend_alive(self) -> bool | None:
        """True/False when known; None when there is no status.json and we did not launch it."""
        proc = self.process
        if proc is not None and proc.poll() is None:
            return True
        try:
            status = read_status(self.run_dir)
        except RunDirError:
            return False if proc is not None else None
        return status.is_live()

    def exit_code(self) -> int | None:
        proc = self.process
        return None if proc is None else proc.poll()

    def log_tail(self, lines: int = 3) -> list[str]:
        """The last lines of backend.log, to say why a backend died."""
        try:
            with os.fdopen(safe_fs.open_read(self.paths.log), "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - 4096))
                text = fh.read().decode("utf-8", "replace")
        except (OSError, RunDirError):
            return []
        return [ln for ln in text.splitlines() if ln.strip()][-lines:]

    # ---- commanding ------------------------------------------------------
    def send(
        self, command: str, args: dict[str, object] | None = None, timeout: float = 60.0
    ) -> CommandAck:
        """Send one command and wait for the backend's ack (blocks: call from a worker).

        Raises ControlError with a one-line message when nobody answers.
        """
        request = CommandRequest(command, dict(args or {}))
        try:
            return send_command(self.run_dir, request, timeout=timeout)
        except ControlError:
            raise
        except OSError as exc:
            raise ControlError(f"cannot reach the backend at {self.paths.control}: {exc}") from None
