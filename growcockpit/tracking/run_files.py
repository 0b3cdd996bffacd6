"""The run directory of a tracked loop: the same files growcockpit's own backend writes.

`events.jsonl` (through the protocol's `EventLog`), `status.json` (the protocol's fold of
the events, kept fresh by a heartbeat), `control.sock` (the protocol's `ControlServer`)
and a system sampler, so `attach`, `status`, `ctl`, `compare`, `export` and the cockpit
read a tracked run exactly as they read one of growcockpit's own.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import torch

from growcockpit.backend.control.liveness import Heartbeat, own_start_time
from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.control.sinks import FanOut
from growcockpit.backend.control.status_writer import StatusWriter
from growcockpit.metrics import SystemSampler
from growcockpit.protocol.control import ControlError, ControlServer
from growcockpit.protocol.eventlog import EventLog
from growcockpit.protocol.events import Event, RunFinished
from growcockpit.protocol.run_safety import check_run_dir
from growcockpit.protocol.rundir import (
    RunDirError,
    RunPaths,
    RunStatus,
    pid_alive,
    read_status,
    write_status,
)
from growcockpit.protocol.safe_fs import DIR_MODE, UnsafePath

FINISHED = ("completed", "stopped", "crashed")


class TrackError(Exception):
    """A tracked run cannot start; the message names the place and the fix."""


def live_problem(root: Path) -> None:
    """A TrackError when the run in `root` is still live (another process writes it)."""
    try:
        status = read_status(root)
    except RunDirError:
        return  # no readable status: nothing is writing it
    live = status.state not in FINISHED and status.pid and pid_alive(status.pid)
    if live and status.pid != os.getpid():
        raise TrackError(
            f"{root}: its run is live (process {status.pid}); stop it first "
            f"(growcockpit ctl {root} stop), then resume with start_step=N"
        )


class TrackedRunFiles:
    """Opens the run directory (refusing one that already holds a run) and closes it cleanly."""

    def __init__(
        self,
        run_dir: Path,
        name: str,
        total_steps: int,
        system_every_s: float,
        device: torch.device,
        resume: bool = False,
    ) -> None:
        self.paths = RunPaths(Path(run_dir))
        root = self.paths.root
        self.resumed = os.path.lexists(self.paths.events)
        if self.resumed and not resume:
            raise TrackError(
                f"{root}: already holds a run (events.jsonl); pass a new directory, "
                "e.g. runs/<name>-2, so no history is mixed, or start_step=N to resume it"
            )
        if self.resumed:
            live_problem(root)
        try:
            root.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            check_run_dir(root, writing=True)
            self.control = ControlServer(self.paths.control)
            self.control.start()
        except (UnsafePath, ControlError, OSError) as exc:
            raise TrackError(f"{root}: cannot open the run directory: {exc}") from None
        self.events = EventLog(self.paths.events)
        status = RunStatus(
            run_id=root.name,
            plan_name=name,
            state="starting",
            num_stages=1,
            total_steps=total_steps,
            pid=os.getpid(),
            pid_started=own_start_time(),
            started=time.time(),
        )
        write_status(self.paths.status, status)
        self.status = StatusWriter(self.paths.status, status)
        self.sink = FanOut(self.events.append, self.status)
        self.reporter = RunReporter(self.sink, self.control)
        self.heartbeat = Heartbeat(self.status.beat)
        self.heartbeat.start()
        self.sampler = (
            SystemSampler(
                self.reporter.emit,
                system_every_s,
                device_index=device.index if device.type == "cuda" else None,
            )
            if system_every_s > 0
            else None
        )
        self.closed = False

    def start_sampler(self) -> None:
        if self.sampler is not None:
            self.sampler.start()

    def emit(self, event: Event) -> Event:
        return self.reporter.emit(event)

    def close(self, finished: RunFinished) -> None:
        """The last event, then every file and thread let go (idempotent)."""
        if self.closed:
            return
        self.closed = True
        if self.sampler is not None:
            self.sampler.stop()
        with contextlib.suppress(Exception):
            self.emit(finished)
        self.heartbeat.stop()
        with contextlib.suppress(Exception):
            self.status.beat()
        self.control.close()
        self.events.close()
