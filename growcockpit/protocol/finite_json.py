"""Standard JSON for numbers that are not finite (a diverged loss, an infinite norm).

Python writes NaN and Infinity as bare tokens that are not JSON, so other
tools (jq, JavaScript, pandas) reject the whole file. The run directory's
files carry them as the strings "NaN", "Infinity" and "-Infinity" instead,
and the protocol's readers turn those strings back into floats wherever the
field is a number, so a reader sees exactly the value the backend had.
"""

from __future__ import annotations

import json
import math
import typing
from typing import Any

NONFINITE: dict[str, float] = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _name(x: float) -> str:
    return "NaN" if x != x else ("Infinity" if x > 0 else "-Infinity")


def _replace(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return _name(value)
    if isinstance(value, dict):
        return {k: _replace(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_replace(v) for v in value]
    return value


def dumps(obj: Any, **kwargs: Any) -> str:
    """`json.dumps` that never writes NaN/Infinity tokens (the common, finite case costs nothing)."""
    try:
        return json.dumps(obj, allow_nan=False, **kwargs)
    except ValueError:
        return json.dumps(_replace(obj), allow_nan=False, **kwargs)


def as_float(value: object) -> object:
    """A "NaN"/"Infinity"/"-Infinity" string as its float; anything else unchanged."""
    if isinstance(value, str):
        return NONFINITE.get(value, value)
    if isinstance(value, list):
        return [NONFINITE.get(v, v) if isinstance(v, str) else v for v in value]
    return value


_FLOAT_FIELDS: dict[type, tuple[str, ...]] = {}


def float_fields(cls: type) -> tuple[str, ...]:
    """Names of a dataclass's fields whose type mentions float (float, float | None, list[float])."""
    names = _FLOAT_FIELDS.get(cls)
    if names is None:
        hints = typing.get_type_hints(cls)
        names = tuple(n for n, h in hints.items() if "float" in str(h) or h is float)
        _FLOAT_FIELDS[cls] = names
    return names


def restore_floats(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """`data` with the non-finite strings of `cls`'s number fields turned back into floats.

    Copies `data` only when something changes; the caller's dict is never modified.
    """
    out = data
    for name in float_fields(cls):
        value = data.get(name)
        if isinstance(value, str | list):
            restored = as_float(value)
            if restored is not value and restored != value:
                if out is data:
                    out = dict(data)
                out[name] = restored
    return out
