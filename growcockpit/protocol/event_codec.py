"""Encoding and decoding event lines: the registry of event types and the codec.

Kept apart from the event types themselves (events.py) so each file has one
job; readers stay forward compatible here: an unknown type decodes to
`UnknownEvent` and unknown fields are dropped.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from . import finite_json
from .events import (
    AwaitingAdvance,
    Checkpoint,
    CommandEvent,
    Error,
    Eval,
    Event,
    GpuStat,
    Grow,
    LayerStat,
    LayerStats,
    ModelLoaded,
    Paused,
    PlanChanged,
    PlateauCheck,
    ProbeCandidate,
    ProbePicked,
    RankMemory,
    RanksMemory,
    Resumed,
    RolledBack,
    RunFinished,
    RunStarted,
    Scalars,
    StageStarted,
    StartupPhase,
    Step,
    System,
    UnknownEvent,
    WarningEvent,
)
from .finite_json import restore_floats
from .samples_event import Samples, SampleText

EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (
        RunStarted,
        StageStarted,
        StartupPhase,
        Step,
        PlateauCheck,
        LayerStats,
        System,
        RanksMemory,
        Eval,
        Scalars,
        Grow,
        Checkpoint,
        CommandEvent,
        PlanChanged,
        RolledBack,
        Paused,
        Resumed,
        AwaitingAdvance,
        WarningEvent,
        Error,
        RunFinished,
        ProbeCandidate,
        ProbePicked,
        ModelLoaded,
        Samples,
    )
}

_NESTED: dict[tuple[str, str], type] = {
    ("layer_stats", "layers"): LayerStat,
    ("system", "gpus"): GpuStat,
    ("rank_memory", "ranks"): RankMemory,
    ("samples", "samples"): SampleText,
}


_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _field_names(cls: type) -> frozenset[str]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    return names


def _build(cls: type, data: dict[str, Any], nonfinite: bool = True) -> Any:
    names = _field_names(cls)
    if nonfinite:
        data = restore_floats(cls, data)
    try:
        if names.issuperset(data):
            return cls(**data)
        return cls(**{k: v for k, v in data.items() if k in names})
    except TypeError as exc:  # a required field is missing
        raise ValueError(f"{cls.__name__}: {exc}") from None


def _header(data: dict[str, Any]) -> tuple[int, float]:
    seq, t = data.get("seq", 0), data.get("t", 0.0)
    if isinstance(seq, bool) or not isinstance(seq, int):
        raise ValueError(f"event seq must be an integer, got {seq!r}")
    if isinstance(t, bool) or not isinstance(t, int | float):
        raise ValueError(f"event t must be a number, got {t!r}")
    return seq, float(t)


def event_from_dict(data: dict[str, Any], nonfinite: bool = True) -> Event:
    """Decode one event; unknown types and fields never raise.

    Raises ValueError only when the object cannot be an event at all: `seq` or
    `t` of the wrong type, or a required field of a nested record missing.
    Number fields written as "NaN"/"Infinity"/"-Infinity" come back as floats
    (`nonfinite=False` skips that look when the line holds no such string).
    """
    seq, t = _header(data)
    etype = str(data.get("type", ""))
    cls = EVENT_TYPES.get(etype)
    if cls is None:
        return UnknownEvent(seq=seq, t=t, raw_type=etype, raw=data)
    kwargs = dict(data)
    del kwargs["type"]
    kwargs["seq"], kwargs["t"] = seq, t
    for (owner, key), nested in _NESTED.items():
        if owner == etype and isinstance(kwargs.get(key), list):
            kwargs[key] = [
                _build(nested, item, nonfinite) for item in kwargs[key] if isinstance(item, dict)
            ]
    event: Event = _build(cls, kwargs, nonfinite)
    return event


def encode_event(event: Event) -> str:
    """One JSON line, without the trailing newline."""
    return finite_json.dumps(event.to_dict(), separators=(",", ":"))


def decode_event(line: str | bytes) -> Event:
    """Decode one JSON line (str or UTF-8 bytes); raises ValueError when malformed."""
    try:
        data = json.loads(line)
    except RecursionError:  # a hostile line: its callers skip ValueErrors
        raise ValueError("event line is nested too deeply") from None
    if not isinstance(data, dict):
        raise ValueError("event line is not a JSON object")
    marks = ('NaN"', 'Infinity"') if isinstance(line, str) else (b'NaN"', b'Infinity"')
    return event_from_dict(data, nonfinite=any(m in line for m in marks))  # type: ignore[operator]
