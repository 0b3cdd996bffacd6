"""Files inside a run directory, touched only as what they claim to be.

Run directories are shared, copied between machines and downloaded, so their
contents are untrusted input: `events.jsonl` may be a symlink to a shell rc
file, `status.json` a FIFO, `final/` a link into someone's home. Every write,
append, replace or delete the backend or the cockpit makes inside a run
directory goes through this module, which never follows a link in the last
path component (`O_NOFOLLOW`, `lstat`), only touches regular files and
directories it owns, and never blocks on a special file (`O_NONBLOCK`, then
`fstat`). Reads are capped in size. Every refusal is an `UnsafePath` whose
message is one line naming the path and the fix.

The run directory itself may be reached through a symlink (`runs/` on another
disk is common); only what is *inside* it is held to these rules.
Standard library only, like the rest of `protocol`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from growcockpit.text.safe_json import read_up_to

FILE_MODE = 0o600
"""Every file growcockpit writes into a run directory: the owner's alone."""
DIR_MODE = 0o700
"""Every directory growcockpit makes in a run directory (checkpoints/, final/, step-N/)."""

MAX_STATUS_BYTES = 1 << 20
MAX_INDEX_BYTES = 512 << 20
MAX_SCAN_ENTRIES = 10_000
"""At most this many entries of checkpoints/ or final/ are checked before a refusal."""

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISREG, "a regular file"),
)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class RunDirError(Exception):
    """A run directory that is missing, unreadable or unsafe; the message says what to do."""


class UnsafePath(RunDirError):
    """A path in a run directory that is not the plain file or directory it should be."""


def kind(mode: int) -> str:
    """'a FIFO', 'a symbolic link', ... for an `st_mode`."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a special file"


def refusal(path: Path | str, what: str, want: str) -> UnsafePath:
    return UnsafePath(
        f"{path}: is {what}, not {want}; growcockpit never reads or writes through links or "
        "special files in a run directory (remove it, or use another run directory)"
    )


def _lstat(path: Path | str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UnsafePath(
            f"{path}: cannot be checked ({exc.strerror or exc}); fix its permissions"
        ) from None


def check_file(path: Path | str) -> bool:
    """True when `path` is a regular file, False when absent; anything else is refused."""
    st = _lstat(path)
    if st is None:
        return False
    if not stat.S_ISREG(st.st_mode):
        raise refusal(path, kind(st.st_mode), "a regular file")
    return True


def check_dir(path: Path | str, *, owned: bool = False) -> bool:
    """True when `path` is a real directory (of ours, with `owned`), False when absent."""
    st = _lstat(path)
    if st is None:
        return False
    if not stat.S_ISDIR(st.st_mode):
        raise refusal(path, kind(st.st_mode), "a directory")
    if owned and st.st_uid != os.getuid():
        raise UnsafePath(
            f"{path}: belongs to uid {st.st_uid}, not to you; growcockpit writes only into "
            "directories of yours (copy the run, or use another run directory)"
        )
    return True


def open_fd(path: Path | str, flags: int, mode: int = FILE_MODE) -> int:
    """`os.open` that refuses a link, a FIFO or a device instead of following or blocking on it.

    The descriptor is a regular file's, in blocking mode again.
    """
    try:
        fd = os.open(path, flags | _NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise refusal(path, "a symbolic link", "a regular file") from None
        if exc.errno in (errno.ENXIO, errno.EISDIR, errno.ENODEV, errno.EOPNOTSUPP):
            st = _lstat(path)
            raise refusal(
                path, kind(st.st_mode) if st else "not a file", "a regular file"
            ) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise refusal(path, kind(st.st_mode), "a regular file")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_append(path: Path | str, mode: int = FILE_MODE) -> int:
    """A write-only, append-mode descriptor of a regular file (created if absent)."""
    return open_fd(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)


def open_log(path: Path | str) -> int:
    """`backend.log` for a child's stdout/stderr: appended to, never through a link."""
    return open_append(path)


def open_read(path: Path | str) -> int:
    """A read-only descriptor of a regular file; FileNotFoundError when it is absent."""
    return open_fd(path, os.O_RDONLY)


def read_bytes(path: Path | str, limit: int) -> bytes:
    """The whole of a regular file of at most `limit` bytes, else an UnsafePath."""
    fd = open_read(path)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise UnsafePath(
                f"{path}: is {size} bytes, over the {limit}-byte limit for this file; "
                "it is not one growcockpit wrote (remove it, or use another run directory)"
            )
        data = read_up_to(fd, limit)
        if len(data) > limit:
            raise UnsafePath(f"{path}: grew past the {limit}-byte limit while being read")
        return data
    finally:
        os.close(fd)


def write_atomic(path: Path | str, data: bytes, mode: int = FILE_MODE) -> None:
    """Replace `path` by a file holding `data`, via a temp file and a rename.

    `os.replace` swaps the directory entry and never writes through a link,
    but a link, FIFO or directory where a file belongs is refused all the
    same: something planted it, and the user should know.
    """
    path = Path(path)
    check_file(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def make_dir(path: Path | str, mode: int = DIR_MODE) -> Path:
    """Make directory `path` (its parent must exist), or accept a real one of ours."""
    path = Path(path)
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        check_dir(path, owned=True)
    return path


def make_temp_dir(parent: Path | str, prefix: str) -> Path:
    """A fresh directory of ours (mode 0700) in `parent`: nothing planted can be in it."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))


def remove_tree(path: Path | str) -> None:
    """Delete directory `path` and what is in it; a link is refused, never followed.

    `shutil.rmtree` walks by file descriptor and unlinks the links it meets
    inside, so only the top needs checking.
    """
    if check_dir(path, owned=True):
        shutil.rmtree(path)


def remove_file(path: Path | str) -> None:
    """Delete regular file `path` if present; anything else is refused."""
    if check_file(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def write_dir(path: Path | str, fill: Callable[[Path], object]) -> None:
    """`fill(tmp)` a fresh directory of ours, then rename it to `path` (replacing one of ours).

    For writers that open plain paths (`save_pretrained`): whatever was
    planted as `path` or inside it is never written through. Files end up
    0600 and the directory 0700, as everything else in a run directory.
    """
    path = Path(path)
    check_dir(path, owned=True)
    tmp = make_temp_dir(path.parent, f".tmp-{path.name}-")
    try:
        fill(tmp)
        for entry in os.scandir(tmp):
            if entry.is_file(follow_symlinks=False):
                os.chmod(entry.path, FILE_MODE)
        remove_tree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
