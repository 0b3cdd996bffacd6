"""What differs between runs' plans: the keys, flattened, whose values are not all equal.

Runs compared side by side usually share most of their plan; a table of every key
would bury the two that matter. Plans (as the runs' `run_started` events carry them)
are flattened to dotted keys (`optim.lr`, `stages.2.train`); a key a plan lacks reads
"–", so a stage only one run has shows as its own rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

MISSING = "–"


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """Dotted keys of nested tables and lists of tables; other values as short text."""
    out: dict[str, str] = {}
    if isinstance(value, Mapping):
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        for i, item in enumerate(value):
            out.update(flatten(item, f"{prefix}.{i}" if prefix else str(i)))
    elif prefix:
        out[prefix] = _text(value)
    return out


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return f"{value:g}"
    return json.dumps(value, separators=(",", ":"))


def config_diff(plans: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """(key, each plan's value) for the keys whose values differ, in the plans' key order.

    Fewer than two plans differ in nothing."""
    if len(plans) < 2:
        return []
    flat = [flatten(p) for p in plans]
    keys: dict[str, None] = {}
    for f in flat:
        keys.update(dict.fromkeys(f))
    rows = []
    for key in keys:
        values = [f.get(key, MISSING) for f in flat]
        if len(set(values)) > 1:
            rows.append((key, values))
    return rows
