"""Clearing what a dead backend left at a run's socket path, before a new one listens.

A run directory is untrusted input, so only what `lstat` proves is ours is
removed: a socket of our uid in our directory, or our symlink to a socket in a
private 0700 directory of ours. Any other symlink is left alone with its target
untouched (a link to ~/.bashrc must not get it deleted); a dangling link is only
unlinked itself. A socket some backend still listens on is never taken over.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from growcockpit.text.control_error import ControlError, one_line

from .safe_fs import kind
from .socket_path import (
    connect_path,
    is_own_private_socket,
    is_own_socket,
    listening,
    remove_private_socket,
)


def clear_stale(path: Path, socket_path: Path) -> None:
    """Remove socket files left at `path` (and `socket_path`, when the socket lives
    elsewhere); raise `ControlError` for anything that is not ours or still live."""
    for p in dict.fromkeys((path, socket_path)):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            continue
        if stat.S_ISSOCK(st.st_mode):
            if not is_own_socket(p):
                raise ControlError(
                    f"{p}: a socket that is not yours (uid {st.st_uid}); remove it and start again"
                )
            _refuse_live(path, str(p))
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)
        elif stat.S_ISLNK(st.st_mode):
            target = Path(connect_path(p))
            if is_own_private_socket(target):
                _refuse_live(path, str(target))
                remove_private_socket(target)
            elif os.path.lexists(target):
                raise ControlError(
                    one_line(
                        f"{p}: a symbolic link to {str(target)[:80]}, which is not a control "
                        "socket of yours; remove the link (its target is left alone) and "
                        "start again"
                    )
                )
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)  # the link itself, never what it points to
        else:
            raise ControlError(
                f"{p}: exists and is {kind(st.st_mode)}, not a socket; remove it and start again"
            )


def _refuse_live(path: Path, address: str) -> None:
    if listening(address):
        raise ControlError(
            f"{path}: another backend is already listening on this run; "
            f"stop it first (`growcockpit ctl {path.parent} stop`)"
        )
