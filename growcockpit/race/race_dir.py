"""The race directory's layout, and the rules every file in it is touched by.

A race directory is shared, copied and downloaded like a run directory, so nothing in
it is trusted: `race.json` may name any path, `runs/` may be a link to someone's home,
`study.journal` a FIFO. So:

- Every run and plan path is derived here from the race directory, the candidate's
  key (letters, digits, `_ . + -`, starting alphanumeric) and the seed; the paths that
  `race.json` stores are never used.
- Each entry is `lstat`ed (`safe_fs`, the run directory's rules): a link or special
  file where a directory or file belongs is refused with one line, never followed.
- The race deletes only a run directory it provably made: one holding the marker file
  the race writes when it makes the directory, checked just before the delete.

The race directory itself may be reached through a link (races on another disk), as a
run directory may; only what is inside it is held to these rules.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from growcockpit.protocol import safe_fs
from growcockpit.protocol.safe_fs import UnsafePath

SPEC_FILE = "race.json"
JOURNAL_FILE = "study.journal"
STOP_FILE = "stop"
RUNS, PLANS, LOGS, LOCKS, PIDS = "runs", "plans", "logs", "locks", "pids"
DIRS = (RUNS, PLANS, LOGS, LOCKS, PIDS)
FILES = (SPEC_FILE, JOURNAL_FILE, STOP_FILE)
MARKER = ".growcockpit-race-run"
MARKER_TEXT = b"made by growcockpit race: it may delete this run directory to start it again\n"
KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,79}")
MAX_SEED = 2**31 - 1


class RaceDirError(Exception):
    """A race directory entry that is not what the race made: one line, the path and the fix."""


def unsafe(exc: UnsafePath) -> RaceDirError:
    """A `safe_fs` refusal, worded for a race directory."""
    return RaceDirError(str(exc).replace("in a run directory", "in a race directory"))


def check_key(key: object) -> str:
    """A candidate key that is one plain path component, else RaceDirError."""
    if not isinstance(key, str) or not KEY_RE.fullmatch(key):
        raise RaceDirError(
            f"candidate key {str(key)[:90]!r} is not letters, digits, _ . + - (at most 80, "
            "starting with a letter or digit)"
        )
    return key


def run_name(key: str, seed: int) -> str:
    return f"{check_key(key)}-s{seed}"


def run_path(race_dir: Path, key: str, seed: int) -> Path:
    return race_dir / RUNS / run_name(key, seed)


def plan_path(race_dir: Path, key: str, seed: int) -> Path:
    return race_dir / PLANS / f"{run_name(key, seed)}.toml"


def race_root(run_dir: Path) -> Path:
    """The race directory of a run directory the race derived (`<race>/runs/<name>`)."""
    return run_dir.parent.parent


def check_root(race_dir: Path) -> bool:
    """True when the race directory exists (a directory, maybe through a link), False when
    absent; then every entry the race uses is checked with `lstat`."""
    try:
        st = os.stat(race_dir)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise RaceDirError(f"{race_dir}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise RaceDirError(f"{race_dir}: is {safe_fs.kind(st.st_mode)}, not a race directory")
    try:
        for name in FILES:
            safe_fs.check_file(race_dir / name)
        for name in DIRS:
            safe_fs.check_dir(race_dir / name)
    except UnsafePath as exc:
        raise unsafe(exc) from None
    return True


def make_root(race_dir: Path) -> None:
    """Make the race directory (and its parents) unless it is there."""
    if not check_root(race_dir):
        try:
            race_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RaceDirError(f"{race_dir}: cannot be made ({exc.strerror or exc})") from None


def subdir(race_dir: Path, name: str) -> Path:
    """`<race>/<name>/`, made if absent; a link or file there is refused."""
    try:
        return safe_fs.make_dir(race_dir / name)
    except UnsafePath as exc:
        raise unsafe(exc) from None
    except OSError as exc:
        raise RaceDirError(f"{race_dir / name}: cannot be made ({exc.strerror or exc})") from None


def write_file(path: Path, data: bytes) -> None:
    """Replace a file of the race (race.json, a plan) atomically, never through a link."""
    try:
        safe_fs.write_atomic(path, data)
    except UnsafePath as exc:
        raise unsafe(exc) from None


def check_run_entry(run_dir: Path) -> bool:
    """True when the run directory exists (a real directory, `runs/` a real one too)."""
    try:
        if not safe_fs.check_dir(run_dir.parent):
            return False
        return safe_fs.check_dir(run_dir)
    except UnsafePath as exc:
        raise unsafe(exc) from None


def made_by_race(run_dir: Path) -> bool:
    """Does the run directory hold the race's marker (a regular file with its text)?"""
    try:
        return safe_fs.read_bytes(run_dir / MARKER, len(MARKER_TEXT)) == MARKER_TEXT
    except (FileNotFoundError, UnsafePath):
        return False


def make_run_dir(run_dir: Path) -> None:
    """Make a run directory for the race and mark it as the race's."""
    subdir(race_root(run_dir), RUNS)
    subdir(run_dir.parent, run_dir.name)
    write_file(run_dir / MARKER, MARKER_TEXT)


def remake_run_dir(run_dir: Path) -> None:
    """Delete a run directory the race made (marker checked first) and make it afresh;
    one that the race did not make is refused, not deleted."""
    if check_run_entry(run_dir):
        if not made_by_race(run_dir):
            raise RaceDirError(
                f"{run_dir}: holds a run without a checkpoint that this race did not make "
                f"(no {MARKER}); the race deletes only its own: remove it yourself if it is "
                "yours to delete, then run the race again"
            )
        try:
            safe_fs.remove_tree(run_dir)
        except UnsafePath as exc:
            raise unsafe(exc) from None
    make_run_dir(run_dir)


def has_checkpoint(run_dir: Path) -> bool:
    """Does the run have a `checkpoints/step-*` directory (links are never listed through)?"""
    ckpts = run_dir / "checkpoints"
    try:
        if not safe_fs.check_dir(ckpts):
            return False
        with os.scandir(ckpts) as entries:
            return any(
                e.name.startswith("step-") and e.is_dir(follow_symlinks=False) for e in entries
            )
    except (UnsafePath, OSError):
        return False
