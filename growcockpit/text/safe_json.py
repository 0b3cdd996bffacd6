"""The one reader for JSON that comes from a user's or a run's files.

Dataset directories, tokenizer and checkpoint files, run directories and race
directories are downloaded, copied and shared, so their JSON is untrusted:
`json.loads` recurses once per nesting level (a `state.json` nested 100,000
deep is a RecursionError traceback, not an error message), reads whatever size
it is given, and `open()` on a FIFO blocks forever. Every such file is read
here: the path is `stat`ed before it is opened (anything but a regular file is
refused without opening it), opened non-blocking, capped in size, and its
nesting depth is bounded by a linear scan before `json.loads` sees it.
Every refusal is a `JsonFileError` whose message is one line naming the file
and the fix. Standard library only and importing no other growcockpit package, so `plan`,
`protocol`, `backend`, `race` and the cockpit share it.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

MAX_JSON_BYTES = 64 << 20
"""The largest JSON file read by default (a large tokenizer.json is ~20 MB)."""
MAX_JSON_DEPTH = 64
"""The deepest nesting accepted (tokenizer.json nests ~6 deep, state.json ~4, an event ~4)."""

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"?', re.S)  # an unterminated string runs to the end: linear
_PAIR = re.compile(rb"[\[{][\]}]")
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def read_up_to(fd: int, limit: int) -> bytes:
    """At most `limit` + 1 bytes of `fd`: one byte past the limit tells the caller the file
    grew after its size was checked (it may still be growing: never read it whole)."""
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = os.read(fd, min(1 << 20, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


class JsonFileError(ValueError):
    """A JSON file (or line) that cannot be used; the message is one line naming it and the fix."""


def too_deep(data: bytes | str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `data`'s arrays and objects may nest deeper than `limit` (strings skipped).

    Never recurses and runs in C-speed passes: strings are blanked, everything
    but brackets is deleted, then innermost pairs are removed once per level,
    at most `limit` times. What is left after that is either empty (depth
    within `limit`) or holds more openers than the remaining levels allow.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False  # the common case: cheaper than the scan
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKET)
    for level in range(limit):
        if not brackets:
            return False
        reduced = _PAIR.sub(b"", brackets)
        if len(reduced) == len(brackets):  # unbalanced: bound the depth by the openers left
            return level + reduced.count(b"[") + reduced.count(b"{") > limit
        brackets = reduced
    return bool(brackets.count(b"[") + brackets.count(b"{"))


def loads(data: bytes | str, where: str, fix: str, limit: int = MAX_JSON_DEPTH) -> object:
    """`json.loads`, after the nesting depth is known to be within `limit`.

    `where` names the file (or file and line) and `fix` says what to do; both
    end up in the one-line JsonFileError.
    """
    if too_deep(data, limit):
        raise JsonFileError(
            f"{where}: not valid JSON (nested more than {limit} levels deep); {fix}"
        )
    try:
        return json.loads(data)
    except RecursionError:  # only reachable with a raised limit; never a traceback
        raise JsonFileError(f"{where}: not valid JSON (nested too deep to read); {fix}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        reason = " ".join(str(exc).split())[:80]
        raise JsonFileError(f"{where}: not valid JSON ({reason}); {fix}") from None


def regular_size(path: Path | str, fix: str, limit: int = MAX_JSON_BYTES) -> int:
    """The size of regular file `path`, checked by `stat` before anything opens it.

    A FIFO, a device, a socket or a directory is refused here: opening a FIFO
    blocks until a writer comes, which is never.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise JsonFileError(f"{path}: is missing; {fix}") from None
    except OSError as exc:
        raise JsonFileError(f"{path}: cannot be read ({exc.strerror}); {fix}") from None
    if not stat.S_ISREG(st.st_mode):
        raise JsonFileError(f"{path} is not a regular file; {fix}")
    if st.st_size > limit:
        raise JsonFileError(
            f"{path}: is {st.st_size:,} bytes, over the {limit:,}-byte limit; {fix}"
        )
    return st.st_size


def read_bytes(path: Path | str, fix: str, limit: int = MAX_JSON_BYTES) -> bytes:
    """The bytes of regular file `path` (at most `limit`), never blocking on a special file."""
    regular_size(path, fix, limit)
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    except OSError as exc:
        raise JsonFileError(f"{path}: cannot be read ({exc.strerror}); {fix}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for a FIFO since the stat
            raise JsonFileError(f"{path} is not a regular file; {fix}")
        data = read_up_to(fd, limit)
    except OSError as exc:
        raise JsonFileError(f"{path}: cannot be read ({exc.strerror}); {fix}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise JsonFileError(f"{path}: grew past the {limit:,}-byte limit while read; {fix}")
    return data


def read_json(
    path: Path | str, fix: str, limit: int = MAX_JSON_BYTES, depth: int = MAX_JSON_DEPTH
) -> object:
    """The JSON value in file `path`: regular, at most `limit` bytes, nested at most `depth`."""
    return loads(read_bytes(path, fix, limit), str(path), fix, depth)


def read_object(
    path: Path | str, fix: str, limit: int = MAX_JSON_BYTES, depth: int = MAX_JSON_DEPTH
) -> dict[str, object]:
    """`read_json` for files that must hold one JSON object."""
    value = read_json(path, fix, limit, depth)
    if not isinstance(value, dict):
        raise JsonFileError(f"{path}: holds a JSON {type(value).__name__}, not an object; {fix}")
    return value
