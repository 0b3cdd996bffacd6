"""Is a race being worked on, and has someone asked it to stop? Both on disk, so that a
cockpit that did not start the race (or was closed and opened again) can tell and ask.

- Presence: every worker holds a shared flock on `<race>/locks/workers.lock` for as long
  as it works; whoever can take it exclusively knows no worker is left. A killed
  worker's lock goes with its process, so a crashed race never reads as live.
- Stop: a `stop` file in the race directory. Workers look for it between candidates and
  while a run trains (runs.py sends that run `stop`, which checkpoints), and leave
  without reporting a half-trained rung; the next `growcockpit race --race-dir DIR`
  removes it and goes on where the race stopped.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

WORKERS_LOCK = Path("locks") / "workers.lock"
STOP_FILE = "stop"


class RaceStopped(Exception):
    """A worker left because the race was asked to stop."""


@contextlib.contextmanager
def worker_presence(race_dir: Path) -> Iterator[None]:
    """Hold the shared presence lock while the body works on the race."""
    path = race_dir / WORKERS_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def race_live(race_dir: Path) -> bool:
    """Is any worker (of any process, on this machine's view of the file) in the race?"""
    path = race_dir / WORKERS_LOCK
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases the lock if we took it
    return False


def request_stop(race_dir: Path) -> None:
    (race_dir / STOP_FILE).write_text("stop requested\n", encoding="utf-8")


def stop_requested(race_dir: Path) -> bool:
    return (race_dir / STOP_FILE).exists()


def clear_stop(race_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (race_dir / STOP_FILE).unlink()
