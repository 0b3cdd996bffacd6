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

from growcockpit.protocol import safe_fs
from growcockpit.protocol.safe_fs import UnsafePath
from growcockpit.race.race_dir import LOCKS, STOP_FILE, RaceDirError, subdir, unsafe, write_file

WORKERS_LOCK = Path(LOCKS) / "workers.lock"


class RaceStopped(Exception):
    """A worker left because the race was asked to stop."""


def open_lock(race_dir: Path, name: str) -> int:
    """A descriptor of `<race>/locks/<name>` to flock (made if absent), never through a link."""
    subdir(race_dir, LOCKS)
    try:
        return safe_fs.open_fd(race_dir / LOCKS / name, os.O_RDWR | os.O_CREAT)
    except UnsafePath as exc:
        raise unsafe(exc) from None


@contextlib.contextmanager
def worker_presence(race_dir: Path) -> Iterator[None]:
    """Hold the shared presence lock while the body works on the race."""
    fd = open_lock(race_dir, WORKERS_LOCK.name)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def race_live(race_dir: Path) -> bool:
    """Is any worker (of any process, on this machine's view of the file) in the race?"""
    try:
        fd = safe_fs.open_read(race_dir / WORKERS_LOCK)
    except (OSError, UnsafePath):  # absent, or planted: no worker of ours holds it
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases the lock if we took it
    return False


def request_stop(race_dir: Path) -> None:
    write_file(race_dir / STOP_FILE, b"stop requested\n")


def stop_requested(race_dir: Path) -> bool:
    """Any entry named `stop` asks the race to stop (nothing is read from it)."""
    return os.path.lexists(race_dir / STOP_FILE)


def clear_stop(race_dir: Path) -> None:
    """Remove the stop request; a link there is removed as a link, a directory refused."""
    path = race_dir / STOP_FILE
    try:
        if os.path.islink(path):
            os.unlink(path)
        else:
            safe_fs.remove_file(path)
    except FileNotFoundError:
        pass
    except UnsafePath as exc:
        raise unsafe(exc) from None
    except OSError as exc:
        raise RaceDirError(f"{path}: cannot be removed ({exc.strerror or exc})") from None
