"""The files of an `init_from` source, checked with the standard library before any is used.

A source directory is downloaded or copied like a checkpoint, and its files are
read by code that trusts them: `json.loads` recurses once per nesting level (a
20k-deep `tokenizer.json` is a RecursionError traceback), and a safetensors
header whose length or offsets lie makes the loader read past the file or
allocate what the header claims. Each file is checked here, in time linear in
its size, while the plan is validated, so a bad source is one line before the
run directory exists.
"""

from __future__ import annotations

import os
import re
import stat
import struct
from pathlib import Path

from growcockpit.text import safe_json
from growcockpit.text.safe_text import quoted

MAX_JSON_BYTES = 64 << 20  # a large tokenizer.json is ~20 MB
MAX_JSON_DEPTH = safe_json.MAX_JSON_DEPTH  # tokenizer.json nests ~6 deep, config.json ~3
MAX_HEADER_BYTES = 100 << 20  # safetensors' own limit
JSON_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "generation_config.json",
    "model.safetensors.index.json",
)
DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "I64": 8, "U64": 8, "F64": 8,
}  # fmt: skip
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.S)  # unterminated: to the end, linear
_BRACKET = re.compile(r"[\[\]{}]")


class SourceFileError(ValueError):
    """A file of the source is not what it claims; the message is one line naming it."""


def _regular_size(path: Path, limit: int) -> int:
    """The size of the regular file `path`; a FIFO, a device or a file over `limit` is refused."""
    st = path.stat()
    if not stat.S_ISREG(st.st_mode):
        raise SourceFileError(f"{path}: not a regular file (a FIFO or a device?)")
    if st.st_size > limit:
        raise SourceFileError(f"{path}: {st.st_size:,} bytes, over the {limit:,}-byte limit")
    return st.st_size


def json_depth(text: str) -> int:
    """How deep `text`'s arrays and objects nest, without recursing (strings skipped)."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text)):
        if match.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def loads_bounded(text: str, where: str) -> object:
    """`json.loads` through the guarded reader (depth within MAX_JSON_DEPTH, one-line errors)."""
    try:
        return safe_json.loads(text, where, "the file is damaged or not the one expected")
    except safe_json.JsonFileError as exc:
        raise SourceFileError(str(exc)) from None


def read_json(path: Path) -> object:
    """A JSON file of the source through the guarded reader: regular, size and depth bounded."""
    try:
        return safe_json.read_json(path, "copy or download the source again", MAX_JSON_BYTES)
    except safe_json.JsonFileError as exc:
        raise SourceFileError(str(exc)) from None


def check_safetensors(path: Path) -> dict[str, tuple[str, list[int]]]:
    """{tensor: (dtype, shape)} from a safetensors header, every claim in it checked:
    the header length within the file, each tensor's offsets within the data and
    exactly its dtype × shape bytes, no two tensors overlapping."""
    size = _regular_size(path, 1 << 46)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise SourceFileError(f"{path}: {size} bytes, too short for a safetensors header")
        (length,) = struct.unpack("<Q", head)
        if length > MAX_HEADER_BYTES or length > size - 8:
            raise SourceFileError(
                f"{path}: header claims {length:,} bytes but the file has {size - 8:,} after "
                f"its length (limit {MAX_HEADER_BYTES:,}); the file is damaged or not safetensors"
            )
        raw = f.read(length)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SourceFileError(f"{path}: header is not UTF-8 JSON") from None
    header = loads_bounded(text, f"{path} (header)")
    if not isinstance(header, dict):
        raise SourceFileError(f"{path}: header is not a JSON object")
    data = size - 8 - length
    spans: list[tuple[int, int, str]] = []
    out: dict[str, tuple[str, list[int]]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        out[name] = _tensor_entry(path, name, entry, data, spans)
    spans.sort()
    for (_, end, a), (begin, _, b) in zip(spans, spans[1:], strict=False):
        if begin < end:
            raise SourceFileError(f"{path}: tensors {a} and {b} overlap")
    return out


def _tensor_entry(
    path: Path, name: str, entry: object, data: int, spans: list[tuple[int, int, str]]
) -> tuple[str, list[int]]:
    bad = f"{path}: tensor {quoted(name)}"
    if not isinstance(entry, dict):
        raise SourceFileError(f"{bad} has no dtype, shape and offsets")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in DTYPE_BYTES:
        raise SourceFileError(f"{bad}: unknown dtype {quoted(str(dtype))}")
    if not isinstance(shape, list) or len(shape) > 8 or not all(_count(d) for d in shape):
        raise SourceFileError(f"{bad}: shape {str(shape)[:60]} is not a list of sizes")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_count(o) for o in offsets)):
        raise SourceFileError(f"{bad}: data_offsets {str(offsets)[:60]} are not [begin, end]")
    begin, end = offsets
    numel = 1
    for d in shape:
        numel *= d
    if not begin <= end <= data or end - begin != numel * DTYPE_BYTES[dtype]:
        raise SourceFileError(
            f"{bad}: {dtype} {shape} needs {numel * DTYPE_BYTES[dtype]:,} bytes but its offsets "
            f"{begin:,}..{end:,} (of {data:,} data bytes) say otherwise"
        )
    spans.append((begin, end, name[:80]))
    return dtype, shape


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 48


def check_source_files(root: Path) -> None:
    """Every JSON and safetensors file of the source directory `root` (SourceFileError)."""
    for name in JSON_FILES[1:]:  # config.json is read by its caller
        if os.path.lexists(root / name):
            read_json(root / name)
    for file in sorted(root.glob("*.safetensors"))[:10_000]:
        check_safetensors(file)
