"""What data a run read, independent of the directory it was launched in.

A relative `data.source` is read from the launch directory, so the same file is
`own.txt` in one plan and `../byo/own.txt` in another, and one name can mean two
files. The backend records, in its `run_started` event, the source's resolved
absolute path and a fingerprint of its content; `compare` holds two runs to the
same data when their fingerprints agree (and falls back to the plan's text for
runs logged before this existed).

The fingerprint reads each file's size, and the first and last 16 KB of the first
256 files (not the corpus: a start stays fast), in the source's file order, without
names or paths: a copy of the
same data elsewhere has the same fingerprint; an edited file almost always not.
Standard library only.
"""

from __future__ import annotations

import hashlib
import os

from growcockpit.plan.data_source import SourceProblem, resolve_source

EDGE_BYTES = 16 << 10
MAX_READ_FILES = 256
"""Files past this many count by their size only (a corpus of many shards starts fast)."""


def _edges(path: str, size: int) -> bytes:
    """The first and last EDGE_BYTES of regular file `path` (opened non-blocking)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        head = os.pread(fd, EDGE_BYTES, 0)
        tail = os.pread(fd, EDGE_BYTES, max(EDGE_BYTES, size - EDGE_BYTES))
    finally:
        os.close(fd)
    return head + tail


def content_fingerprint(files: tuple[str, ...]) -> str:
    """sha1 over each file's size and edges, in order (module doc)."""
    h = hashlib.sha1()
    for index, path in enumerate(files):
        size = os.stat(path).st_size
        h.update(f"{index}:{size};".encode())
        if index < MAX_READ_FILES:
            h.update(_edges(path, size))
    return h.hexdigest()[:16]


def source_identity(source: str) -> dict[str, str]:
    """{"path": resolved absolute path, "fingerprint": content} of a local source; {} for
    "builtin", a hub name, a generated task or a source that cannot be read now."""
    if source == "builtin":
        return {}
    try:
        found = resolve_source(source)
        if found.kind == "hub" or not found.files:
            return {}
        fingerprint = content_fingerprint(found.files + found.val_files)
    except (SourceProblem, OSError):
        return {}
    return {
        "path": os.path.realpath(os.path.expanduser(source)),
        "fingerprint": f"{found.kind}:{fingerprint}",
    }
