"""TensorBoard event files written with the standard library alone.

An event file is a TFRecord stream of `Event` protos: each record is its length
(uint64 LE), the masked CRC-32C of that, the bytes, and their masked CRC-32C.
The few protos a dashboard needs (an Event holding a Summary of scalar values
and text tensors) are encoded here field by field, so `logging.tensorboard`
and `growcockpit export --tensorboard` work on the default install; the
`tensorboard` package is needed only to look at the files. A test checks the
bytes against TensorBoard's own protos and reads the files back with its loader.
"""

from __future__ import annotations

import math
import os
import socket
import struct
import time
from pathlib import Path

FILE_VERSION = "brain.Event:2"
TEXT_PLUGIN = "text"
DT_STRING = 7  # TensorFlow's dtype enum
FLOAT32_MAX = 3.4028234663852886e38


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked(data: bytes) -> bytes:
    crc = crc32c(data)
    return struct.pack("<I", (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)


def record(data: bytes) -> bytes:
    """One TFRecord: length, its CRC, the data, its CRC."""
    length = struct.pack("<Q", len(data))
    return length + _masked(length) + data + _masked(data)


# ---- protobuf wire format -----------------------------------------------------------
def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # int64: negative numbers as ten bytes, as protobuf does
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _bytes(field: int, value: bytes) -> bytes:
    return _key(field, 2) + _varint(len(value)) + value


def _str(field: int, value: str) -> bytes:
    return _bytes(field, value.encode("utf-8"))


def scalar_value(tag: str, value: float) -> bytes:
    """Summary.Value{tag, simple_value} (a float32: beyond its range, ±inf)."""
    if math.isfinite(value) and abs(value) > FLOAT32_MAX:
        value = math.copysign(math.inf, value)
    return _str(1, tag) + _key(2, 5) + struct.pack("<f", value)


def text_value(tag: str, text: str) -> bytes:
    """Summary.Value{tag, metadata: text plugin, tensor: a scalar string}, as `text_pb`."""
    plugin = _str(1, TEXT_PLUGIN)  # PluginData{plugin_name}; content: version 0, empty
    metadata = _bytes(1, plugin)  # SummaryMetadata{plugin_data}
    tensor = _key(1, 0) + _varint(DT_STRING) + _bytes(2, b"") + _bytes(8, text.encode("utf-8"))
    return _str(1, tag) + _bytes(8, tensor) + _bytes(9, metadata)  # in field order


def event(wall_time: float, step: int = 0, values: list[bytes] | None = None) -> bytes:
    """Event{wall_time, step, summary{value...}} (no step or summary when zero or empty)."""
    out = _key(1, 1) + struct.pack("<d", wall_time)
    if step:
        out += _key(2, 0) + _varint(step)
    if values:
        out += _bytes(5, b"".join(_bytes(1, v) for v in values))
    return out


def version_event(wall_time: float) -> bytes:
    return _key(1, 1) + struct.pack("<d", wall_time) + _str(3, FILE_VERSION)


class EventFileWriter:
    """Appends events to a new `events.out.tfevents.*` file in `log_dir`."""

    def __init__(self, log_dir: Path) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        now = time.time()
        name = f"events.out.tfevents.{int(now):010d}.{socket.gethostname()}.{os.getpid()}.0"
        self.path = log_dir / name
        self._file = open(self.path, "ab")  # noqa: SIM115 - held open for the run
        self._file.write(record(version_event(now)))

    def add(self, data: bytes) -> None:
        self._file.write(record(data))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
