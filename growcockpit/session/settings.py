"""Remembered cockpit settings (the theme) in `$XDG_CONFIG_HOME/growcockpit/settings.json`.

Plain JSON, written atomically; a missing or broken file means defaults, never an error.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def settings_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "growcockpit" / "settings.json"


def load_settings(path: Path | None = None) -> dict[str, Any]:
    path = settings_path() if path is None else path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_settings(values: dict[str, Any], path: Path | None = None) -> bool:
    """Merge `values` into the settings file; False (and no exception) when it cannot be written."""
    path = settings_path() if path is None else path
    data = load_settings(path)
    data.update(values)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".settings.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(Exception):
            os.unlink(tmp)
        return False
    return True
