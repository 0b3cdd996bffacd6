"""Where a run's control socket lives, and who is on the other end of it.

Unix socket paths are limited to about 107 bytes. For a longer run path the
real socket lives in a fresh private directory (mode 0700, random name, made
by `mkdtemp`) in the temp dir, and `control.sock` is a symlink to it; clients
follow the symlink (`connect_path`). A predictable name in /tmp would let
another user bind it first and receive the commands.

The socket file is mode 0600, and the server also asks the kernel who
connected (`SO_PEERCRED`), so a socket reached some other way (a copied
symlink, a loosened mode) still only answers its owner.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import struct
import tempfile
from pathlib import Path

from .rundir import RunPaths

MAX_SOCKET_PATH = 100
"""Longest socket path (bytes) bound directly; longer ones go through a symlink."""

PRIVATE_PREFIX = "growcockpit-"
SOCKET_NAME = RunPaths.CONTROL


def needs_short_path(path: Path) -> bool:
    return len(str(path).encode()) > MAX_SOCKET_PATH


def private_socket_path() -> Path:
    """A socket path inside a new directory only this user can enter (mode 0700)."""
    base = tempfile.gettempdir()
    if len(base.encode()) > MAX_SOCKET_PATH - 40:  # e.g. a long $TMPDIR on macOS
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix=PRIVATE_PREFIX, dir=base)) / SOCKET_NAME


def is_own_private_socket(path: Path) -> bool:
    """Is `path` a socket of ours in a `private_socket_path` directory (0700, ours, not a link)?

    Proven with `lstat` on both, so a `control.sock` symlink planted to point
    at any other file can never get that file deleted.
    """
    path = Path(path)
    if path.name != SOCKET_NAME or not path.parent.name.startswith(PRIVATE_PREFIX):
        return False
    try:
        folder, sock = os.lstat(path.parent), os.lstat(path)
    except OSError:
        return False
    uid = os.getuid()
    return (
        stat.S_ISDIR(folder.st_mode)
        and folder.st_uid == uid
        and stat.S_IMODE(folder.st_mode) == 0o700
        and stat.S_ISSOCK(sock.st_mode)
        and sock.st_uid == uid
    )


def is_own_socket(path: Path) -> bool:
    """Is `path` (not followed) a socket owned by us, in a directory owned by us?"""
    try:
        sock, folder = os.lstat(path), os.stat(Path(path).parent)
    except OSError:
        return False
    uid = os.getuid()
    return stat.S_ISSOCK(sock.st_mode) and sock.st_uid == uid and folder.st_uid == uid


def remove_private_socket(path: Path) -> None:
    """Remove a socket made by `private_socket_path` and its directory, if provably ours."""
    if not is_own_private_socket(path):
        return
    with contextlib.suppress(OSError):
        os.unlink(path)
    with contextlib.suppress(OSError):
        os.rmdir(path.parent)


def connect_path(path: Path) -> str:
    """The address a client connects to: `path`, or the target of its symlink."""
    path = Path(path)
    if path.is_symlink():
        target = Path(os.readlink(path))
        return str(target if target.is_absolute() else path.parent / target)
    return str(path)


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket; None where the OS cannot say."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    fmt = "3i"  # struct ucred: pid, uid, gid
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize(fmt))
    except OSError:
        return None
    _, uid, _ = struct.unpack(fmt, raw)
    return int(uid)


def listening(address: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(address)
        except OSError:
            return False
    return True
