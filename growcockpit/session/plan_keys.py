"""A run's plan as flat keys (`model.family`, `optim.lr`, `stages`) for Home's columns.

Read from the run directory's `plan.toml` (what the backend ran), capped in size and
refusing links and special files like every read of a run directory, and cached by
the file's size and modification time: Home re-reads the catalog every couple of
seconds, and hundreds of runs must cost a `stat` each, not a TOML parse each.
Nothing here knows Textual; Home calls it from its catalog worker.
"""

from __future__ import annotations

import os
import threading
import tomllib
from pathlib import Path

from growcockpit.protocol.rundir import RunPaths
from growcockpit.protocol.safe_fs import RunDirError, read_bytes

PlanScalar = str | int | float | bool
MAX_PLAN_BYTES = 1 << 20
MAX_DEPTH = 4  # model.x, budget.y, … : deeper tables are not columns anyone picks


def flatten(data: dict[str, object], prefix: str = "", depth: int = 0) -> dict[str, PlanScalar]:
    """Tables become dotted keys; `stages` (a list of tables) its count; other lists are
    left out (no single value to show or sort by)."""
    out: dict[str, PlanScalar] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and depth < MAX_DEPTH:
            out.update(flatten(value, f"{name}.", depth + 1))
        elif isinstance(value, str | int | float | bool):
            out[name] = value
        elif name == "stages" and isinstance(value, list):
            out[name] = len(value)
    return out


class PlanKeys:
    """Each run's flattened plan, re-parsed only when its plan.toml changed."""

    def __init__(self) -> None:
        self._cache: dict[Path, tuple[tuple[int, int], dict[str, PlanScalar]]] = {}
        self._lock = threading.Lock()

    def of(self, run_dir: Path) -> dict[str, PlanScalar]:
        """The run's plan keys; {} when it has no readable plan.toml."""
        path = RunPaths(Path(run_dir)).plan
        try:
            info = os.stat(path)
        except OSError:
            return {}
        stamp = (info.st_mtime_ns, info.st_size)
        with self._lock:
            hit = self._cache.get(path)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        try:
            data = tomllib.loads(read_bytes(path, MAX_PLAN_BYTES).decode("utf-8"))
        except (OSError, RunDirError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            values: dict[str, PlanScalar] = {}
        else:
            values = flatten(data)
        with self._lock:
            self._cache[path] = (stamp, values)
        return values
