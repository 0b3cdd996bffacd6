"""Is this run directory safe to use? One `lstat` pass over what growcockpit touches.

The per-call guards of `safe_fs` stop a write through a planted link at the
moment it happens, which can be deep into a run (final/ is written at the
very end). `check_run_dir` runs the same rules over every name the backend
and cockpit use *before* anything is written, so a hostile directory is
refused up front with one line, and a run is never half-done when refused.
Only `lstat` is used: nothing is opened, so a FIFO cannot block the check.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .rundir import RunPaths
from .safe_fs import MAX_SCAN_ENTRIES, UnsafePath, check_dir, check_file, kind, refusal
from .socket_path import is_own_private_socket

FILES = RunPaths.FILES
DIRS = RunPaths.DIRS
CONTROL = RunPaths.CONTROL


def check_run_dir(root: Path, *, writing: bool) -> None:
    """Refuse (UnsafePath, one line naming the path) a run directory with a planted entry.

    `writing`: the caller will write into it (train, resume), so the directory
    must also be the user's own. Missing entries are fine: a new run has none.
    """
    root = Path(root)
    if not check_dir(root.resolve(), owned=writing):
        return
    for name in FILES:
        check_file(root / name)
    for name in DIRS:
        if check_dir(root / name, owned=writing):
            _check_tree(root / name, owned=writing)
    check_control(root / CONTROL)


def check_control(path: Path) -> None:
    """`control.sock` may be a socket or our symlink to a private one; nothing else."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISSOCK(st.st_mode):
        return  # whose socket it is decides only whether it may be removed (control.py)
    if stat.S_ISLNK(st.st_mode):
        target = Path(os.readlink(path))
        if not target.is_absolute() or not target.name == CONTROL:
            raise refusal(path, f"a symbolic link to {str(target)[:80]}", "a control socket")
        if os.path.lexists(target) and not is_own_private_socket(target):
            raise refusal(path, f"a symbolic link to {str(target)[:80]}", "our control socket")
        return
    raise refusal(path, kind(st.st_mode), "a control socket")


def _check_tree(top: Path, *, owned: bool) -> None:
    """Entries of checkpoints/, final/... and one level below: real files and directories only."""
    seen = 0
    stack = [(top, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            raise UnsafePath(
                f"{folder}: cannot be listed ({exc.strerror or exc}); fix its permissions"
            ) from None
        for entry in entries:
            seen += 1
            if seen > MAX_SCAN_ENTRIES:
                raise UnsafePath(
                    f"{top}: holds more than {MAX_SCAN_ENTRIES} entries; it is not one "
                    "growcockpit wrote (remove it, or use another run directory)"
                )
            path = Path(entry.path)
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                check_dir(path, owned=owned)
                if depth < 2:
                    stack.append((path, depth + 1))
            elif not stat.S_ISREG(mode):
                raise refusal(path, kind(mode), "a regular file or directory")
