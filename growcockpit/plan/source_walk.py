"""The files under a `data.source` directory, found by a bounded walk.

`data.source = "."` or `".."` (half of a path being typed in the designer) once walked the
whole parent tree, a 1.6 GB virtual environment included, three times per keystroke. A
corpus is a directory of data files, never a repository's tooling: the walk skips
version-control and cache directories, `node_modules` and every virtual environment (a
directory holding `pyvenv.cfg`), does not follow symlinked directories (no loops), and
stops after `MAX_WALK_ENTRIES` entries, saying so, so its cost has a ceiling whatever the
path points at.
"""

from __future__ import annotations

import os
from collections import deque
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
    """Regular files under a directory (sorted); `truncated`: it stopped at the limit."""

    files: tuple[Path, ...]
    truncated: bool
    limit: int


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
    pending = deque([str(root)])
    seen = 0
    while pending:
        folder = pending.popleft()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if seen > limit:
                        return Walk(tuple(sorted(files)), True, limit)
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if not skipped(entry):
                                pending.append(entry.path)
                        elif entry.is_file():
                            files.append(Path(entry.path))
                    except OSError:
                        continue  # vanished or unreadable: not part of the corpus
        except OSError:
            continue
    return Walk(tuple(sorted(files)), False, limit)
