"""The files under a `data.source` directory, found by a bounded walk.

`data.source = "."` or `".."` (half of a path being typed in the designer) once walked the
whole parent tree, a 1.6 GB virtual environment included, three times per keystroke. A
corpus is a directory of data files, never a repository's tooling: the walk skips
version-control and cache directories, `node_modules` and every virtual environment (a
directory holding `pyvenv.cfg`), does not follow symlinked directories (no loops), and
stops after `MAX_WALK_ENTRIES` entries, saying so, so its cost has a ceiling whatever the
path points at.

A FIFO, a socket or a device node under the directory is never opened (`open()` on a
FIFO blocks until a writer comes), but it is not dropped in silence either: the walk
lists it in `special`, so validation and the backend's start-up can name it.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_WALK_ENTRIES = 20_000  # files and directories seen; a sharded corpus has far fewer
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "site-packages",
    }
)
VENV_MARKER = "pyvenv.cfg"


@dataclass(frozen=True)
class Walk:
    """Regular files under a directory (sorted); `truncated`: it stopped at the limit;
    `special`: the FIFOs, sockets and device nodes seen (sorted), never opened."""

    files: tuple[Path, ...]
    truncated: bool
    limit: int
    special: tuple[Path, ...] = ()


_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


def special_kind(path: str | Path) -> str | None:
    """What a FIFO, socket or device entry is ("a FIFO"...), through a link too; else None.

    Only `stat` is called: nothing is opened, so a FIFO cannot block the check."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # vanished, or a dangling link: not part of the corpus
    return next((kind for test, kind in _SPECIAL_KINDS if test(mode)), None)


def special_count(special: Sequence[str | Path]) -> str:
    """How many entries are not regular files, and the first one's path and kind."""
    first = special[0]
    kind = special_kind(first) or "not a regular file"
    if len(special) == 1:
        return f"1 entry that is not a regular file: {first} ({kind})"
    return f"{len(special):,} entries that are not regular files, the first {first} ({kind})"


def special_note(special: Sequence[str | Path]) -> str:
    """One line naming the entries a source skips because they are not regular files
    (though other files remain to train on)."""
    its, file, it = ("its", "a regular file", "it")
    if len(special) > 1:
        its, file, it = ("their", "regular files", "them")
    return (
        f"skipping {special_count(special)}, never opened; write {its} data to {file} "
        f"to train on {it}, or take {it} out of the source"
    )


def skipped(entry: os.DirEntry[str]) -> bool:
    """A directory no corpus lives in: tooling, caches, a virtual environment."""
    if entry.name in SKIPPED_DIRS:
        return True
    return os.path.isfile(os.path.join(entry.path, VENV_MARKER))


def walk_files(root: Path, limit: int | None = None) -> Walk:
    """Every regular file under `root`, breadth first, at most `limit` entries looked at
    (default MAX_WALK_ENTRIES)."""
    limit = MAX_WALK_ENTRIES if limit is None else limit
    files: list[Path] = []
    special: list[Path] = []
    pending = deque([str(root)])
    seen = 0
    while pending:
        folder = pending.popleft()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if seen > limit:
                        return Walk(tuple(sorted(files)), True, limit, tuple(sorted(special)))
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if not skipped(entry):
                                pending.append(entry.path)
                        elif entry.is_file():
                            files.append(Path(entry.path))
                        elif special_kind(entry.path) is not None:
                            special.append(Path(entry.path))
                    except OSError:
                        continue  # vanished or unreadable: not part of the corpus
        except OSError:
            continue
    return Walk(tuple(sorted(files)), False, limit, tuple(sorted(special)))
