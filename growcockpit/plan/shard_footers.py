"""The ends of a source's `.arrow` and `.parquet` shards, checked at `plan validate`.

A copy or a download cut short leaves a shard whose head is fine and whose end
is missing; reading only the first file's head let it pass validation and fail
once the run directory existed, deep in `datasets`. A complete file ends in a
known way, so each shard's last bytes are read (a `stat` and 12 bytes each, never
the body) and a cut one is named before anything starts:

- Parquet ends with a 4-byte footer length and the magic `PAR1`, and the footer
  fits in the file after the leading `PAR1`;
- an Arrow IPC stream (what `datasets.save_to_disk` and its cache write) ends
  with the end-of-stream marker `FF FF FF FF 00 00 00 00`;
- an Arrow IPC file (`ARROW1` at its start) ends with `ARROW1` too.

Each file is `stat`ed first: a FIFO or a device is named and never opened.
"""

from __future__ import annotations

import os
import stat
import struct

from growcockpit.plan.data_source import SourceFiles

MAX_CHECKED = 10_000
"""At most this many shards are checked (each costs a stat and one 12-byte read)."""
_STREAM_END = b"\xff\xff\xff\xff\x00\x00\x00\x00"
_FILE_MAGIC = b"ARROW1"
_PARQUET_MAGIC = b"PAR1"
_RESAVE = {
    "arrow": "save it again with ds.save_to_disk(DIR) (or copy it again whole)",
    "parquet": "write it again with ds.to_parquet(...) (or copy it again whole)",
}


def _ends(path: str, n: int) -> tuple[bytes, bytes]:
    """The first and last `n` bytes of regular file `path` (opened non-blocking)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        head = os.pread(fd, n, 0)
        size = os.fstat(fd).st_size
        tail = os.pread(fd, n, max(0, size - n))
    finally:
        os.close(fd)
    return head, tail


def parquet_problem(head: bytes, tail: bytes, size: int) -> str | None:
    if not head.startswith(_PARQUET_MAGIC):
        return "is not a Parquet file (no PAR1 at its start)"
    if size < 12 or not tail.endswith(_PARQUET_MAGIC):
        return "is cut short (no PAR1 footer at its end)"
    (footer,) = struct.unpack("<I", tail[-8:-4])
    if footer == 0 or footer > size - 12:
        return f"is damaged (its footer claims {footer:,} bytes of a {size:,}-byte file)"
    return None


def arrow_problem(head: bytes, tail: bytes, size: int) -> str | None:
    if head.startswith(_FILE_MAGIC):
        if size < 14 or not tail.endswith(_FILE_MAGIC):
            return "is cut short (an Arrow file without ARROW1 at its end)"
        return None
    if size < 8 or not tail.endswith(_STREAM_END):
        return "is cut short (an Arrow stream without its end-of-stream marker)"
    return None


def shard_problem(path: str, kind: str) -> str | None:
    """What is wrong with the end of one `.arrow`/`.parquet` shard (None: it is whole)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"{path} cannot be read ({exc.strerror}); check the path and permissions"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file; give the data file itself"
    try:
        head, tail = _ends(path, 12)
    except OSError as exc:
        return f"{path} cannot be read ({exc.strerror}); check the path and permissions"
    check = parquet_problem if kind == "parquet" else arrow_problem
    problem = check(head, tail, st.st_size)
    return f"{path} {problem}; {_RESAVE[kind]}" if problem else None


def footer_problem(found: SourceFiles) -> str | None:
    """The first shard of `found` (train, then validation files) whose end is wrong."""
    if found.kind not in _RESAVE:
        return None
    for path in (found.files + found.val_files)[:MAX_CHECKED]:
        problem = shard_problem(path, found.kind)
        if problem:
            return problem
    return None
