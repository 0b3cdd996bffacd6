"""Typed conversion of one TOML table to one dataclass of plan/types.py.

Out of plan/load.py (which walks a whole plan): strict per table, so every
section, a stage and an `edit_stages` item convert alike. Unknown keys are
errors that name the key and list the valid ones (with a close match), and
values must have the field's type (an int is fine where a float is expected;
a bool is never an int).
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from typing import Any, Literal

from growcockpit.plan.limits import echo, quoted

Problems = list[tuple[str, str]]  # (key path, problem)


def type_hints(cls: type[Any]) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def field_names(cls: type[Any]) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def unknown_key_problem(key: str, valid: typing.Iterable[str]) -> str:
    """'unknown key "x"; did you mean "y"? valid keys: …'."""
    valid = list(valid)
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    guess = f'did you mean "{close[0]}"? ' if close else ""
    return f"unknown key {quoted(key)}; {guess}valid keys: {', '.join(valid)}"


def type_name(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "table"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def convert_value(value: object, tp: Any, key: str, problems: Problems) -> tuple[bool, Any]:
    """Check `value` against annotation `tp`; (ok, converted value)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return True, None
        return convert_value(value, args[0], key, problems)
    if origin is Literal:
        tp = str
    got = f"got {type_name(value)} {echo(value)}"
    if tp is bool:
        if isinstance(value, bool):
            return True, value
        problems.append((key, f"expected true or false, {got}; write true or false (no quotes)"))
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return True, value
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            problems.append((key, f"expected an integer, {got}; write {int(value)}"))
        else:
            problems.append((key, f"expected an integer, {got}; write a whole number"))
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return True, float(value)
        problems.append((key, f"expected a number, {got}; write a number such as 0.5"))
    elif tp is str:
        if isinstance(value, str):
            return True, value
        problems.append((key, f'expected a string, {got}; put the value in quotes: "..."'))
    elif typing.get_origin(tp) is list:  # its items are the field's own validation's
        if isinstance(value, list):
            return True, value
        problems.append((key, f"expected an array, {got}; write [ ... ]"))
    else:  # pragma: no cover - only the types above occur in types.py
        raise TypeError(f"unsupported field type {tp!r} for {key}")
    return False, None


def convert_table(
    cls: type[Any],
    data: object,
    path: str,
    problems: Problems,
    *,
    required: tuple[str, ...] = (),
    hints: dict[str, str] | None = None,
    defaults: dict[str, Any] | None = None,
) -> Any | None:
    """One dataclass from one table; None when anything is wrong."""
    if not isinstance(data, dict):
        problems.append(
            (
                path,
                f"expected a table, got {type_name(data)} {data!r}; write it as [{path}] with key = value lines",
            )
        )
        return None
    names = field_names(cls)
    types_ = type_hints(cls)
    kwargs: dict[str, Any] = dict(defaults or {})
    ok = True
    for key, value in data.items():
        full = f"{path}.{key}" if path else str(key)
        if key not in names:
            problems.append((full, unknown_key_problem(str(key), names)))
            ok = False
            continue
        good, converted = convert_value(value, types_[key], full, problems)
        ok = ok and good
        if good and converted is not None:
            kwargs[key] = converted
    for key in required:
        if key not in data:
            hint = (hints or {}).get(key, f"add {key} = ...")
            problems.append((f"{path}.{key}", f'missing required key "{key}"; {hint}'))
            ok = False
    if not ok:
        return None
    return cls(**kwargs)
