"""Whether a decoded event's fields hold what their types say.

Decoding (event_codec) builds an event from any JSON object with the right type
name and drops unknown keys, but it does not check the values: a hand-edited or
hostile line such as `{"type": "step", "loss": "x"}` decodes to a Step whose
loss is a string. Every reader that folds or mirrors events asks `bad_field`
first and skips such an event like an undecodable line: the cockpit's fold
(once a Textual traceback with exit code 0 when it drew "x" as a loss) and
`export` alike, so both count the same lines as damaged.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any

from .events import Event

Check = Callable[[Any], bool]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_SIMPLE: dict[Any, Check] = {
    int: _integer,
    float: _number,
    str: lambda v: isinstance(v, str),
    bool: lambda v: isinstance(v, bool),
    Any: lambda v: True,
}


def _check_for(hint: Any) -> Check:
    """A predicate for values of the type `hint` (events use a handful of shapes)."""
    if hint in _SIMPLE:
        return _SIMPLE[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        options = [_check_for(a) for a in args]
        return lambda v: any(ok(v) for ok in options)
    if hint is type(None):
        return lambda v: v is None
    if origin is list:
        item = _check_for(args[0]) if args else _SIMPLE[Any]
        return lambda v: isinstance(v, list) and all(item(x) for x in v)
    if origin is dict:
        return lambda v: isinstance(v, dict)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        record: type = hint  # a nested record (LayerStat, GpuStat), built by the codec
        return lambda v: isinstance(v, record) and bad_field(v) is None
    return _SIMPLE[Any]


_CHECKS: dict[type, list[tuple[str, Check]]] = {}


def _checks(cls: type) -> list[tuple[str, Check]]:
    found = _CHECKS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = _CHECKS[cls] = [
            (f.name, _check_for(hints[f.name])) for f in dataclasses.fields(cls)
        ]
    return found


def bad_field(event: Event | Any) -> str | None:
    """The first field of `event` (or of a nested record) whose value is not of its type
    (None when all are)."""
    for name, ok in _checks(type(event)):
        if not ok(getattr(event, name)):
            return name
    return None
