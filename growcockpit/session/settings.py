"""Remembered cockpit settings (the theme) in `$XDG_CONFIG_HOME/growcockpit/settings.json`.

Plain JSON, written atomically; a missing or broken file (or a FIFO, a device, a huge
file where it should be) means defaults, never an error and never a hang.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any


def settings_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "growcockpit" / "settings.json"


MAX_SETTINGS_BYTES = 64 << 10


def load_settings(path: Path | None = None) -> dict[str, Any]:
    path = settings_path() if path is None else path
    try:
        data = json.loads(read_regular(path, MAX_SETTINGS_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def read_regular(path: Path, limit: int) -> bytes:
    """A regular file's bytes (a link to one is fine: dotfile managers link config files);
    OSError for anything else. Opened non-blocking: opening a FIFO for reading waits for a
    writer, and a FIFO planted as settings.json hung the cockpit at start."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            raise OSError(
                f"{path}: not a settings file (not a regular file, or over {limit} bytes)"
            )
        return os.read(fd, limit + 1)[:limit]
    finally:
        os.close(fd)


def save_settings(values: dict[str, Any], path: Path | None = None) -> bool:
    """Merge `values` into the settings file; False (and no exception) when it cannot be written."""
    path = settings_path() if path is None else path
    data = load_settings(path)
    data.update(values)
    return write_json(path, data)


def write_json(path: Path, data: object) -> bool:
    """Replace `path` by `data` as JSON, atomically (a temp file and a rename), creating
    its folder; False (and no exception) when it cannot be written."""
    tmp = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2)
        os.replace(tmp, path)
    except OSError:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return False
    return True
