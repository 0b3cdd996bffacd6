"""`race.json` read back as untrusted input, and written without following links.

The file is read as `safe_fs` reads a run directory's files (a regular file, bounded,
never through a link or from a FIFO), its JSON bounded in depth, and every field
checked against `RaceSpec`'s and `Candidate`'s own type hints, so a field added to them
is checked too. The run and plan paths it stores are replaced by the ones derived from
the race directory, the key and the seed (race_dir.py): a race directory that was
moved still works, and one whose `race.json` names another directory touches nothing
outside itself. Every problem is one line naming the file and what to do.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from pathlib import Path
from typing import Any, Literal

from growcockpit.plan.source_files import SourceFileError, loads_bounded
from growcockpit.protocol.safe_fs import UnsafePath, read_bytes
from growcockpit.race.candidates import Candidate, RaceSpec
from growcockpit.race.race_dir import (
    MAX_SEED,
    SPEC_FILE,
    RaceDirError,
    check_key,
    make_root,
    plan_path,
    run_path,
    unsafe,
    write_file,
)

MAX_SPEC_BYTES = 4 << 20
MAX_CANDIDATES = 10_000
MAX_SEEDS = 1_000
MAX_RUNGS = 64
FIX = "restore it, or start the race again in a new --race-dir"


class SpecError(ValueError):
    """One field of race.json that is not what the race wrote."""


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _checked(value: object, hint: Any, where: str) -> object:
    """`value` if it fits `hint` (int, float, bool, str, list[...], unions, Literal,
    Candidate), else SpecError naming `where`."""
    origin = typing.get_origin(hint)
    if hint is Candidate:
        return _candidate(value, where)
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(hint):
            try:
                return _checked(value, option, where)
            except SpecError:
                continue
        raise SpecError(f"{where}: {str(value)[:40]!r} is not a valid {hint}")
    if origin is Literal:
        if value in typing.get_args(hint):
            return value
        raise SpecError(f"{where}: {str(value)[:40]!r} is not one of {typing.get_args(hint)}")
    if origin is list:
        if not isinstance(value, list):
            raise SpecError(f"{where}: is not a list")
        (item,) = typing.get_args(hint)
        return [_checked(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    simple = {
        type(None): value is None,
        bool: isinstance(value, bool),
        str: isinstance(value, str),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: _number(value) and math.isfinite(float(value)),  # type: ignore[arg-type]
    }
    if hint not in simple:
        raise TypeError(f"race.json: no check for a field of type {hint}")  # for a developer
    if not simple[hint]:
        raise SpecError(f"{where}: {str(value)[:40]!r} is not a valid {hint.__name__}")
    return float(value) if hint is float else value  # type: ignore[arg-type]


def _fields(data: object, cls: type, where: str) -> dict[str, object]:
    """`data`'s fields checked against dataclass `cls` (missing ones with a default are
    left to it; unknown ones refused)."""
    if not isinstance(data, dict):
        raise SpecError(f"{where}: is not a JSON object")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [k for k in data if k not in known]
    if unknown:
        raise SpecError(f"{where}: unknown field {str(unknown[0])[:40]!r}")
    out: dict[str, object] = {}
    for name, f in known.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise SpecError(f"{where}: field {name!r} is missing")
            continue
        out[name] = _checked(data[name], hints[name], f"{where}.{name}")
    return out


def _candidate(value: object, where: str) -> Candidate:
    fields = _fields(value, Candidate, where)
    try:
        check_key(fields["key"])
    except RaceDirError as exc:
        raise SpecError(f"{where}.key: {exc}") from None
    return Candidate(**fields)  # type: ignore[arg-type]


def _spec(data: object, race_dir: Path) -> RaceSpec:
    spec = RaceSpec(**_fields(data, RaceSpec, "race"))  # type: ignore[arg-type]
    keys = [c.key for c in spec.candidates]
    bounds = (
        (1 <= len(keys) <= MAX_CANDIDATES, f"1 to {MAX_CANDIDATES} candidates"),
        (len(set(keys)) == len(keys), "each candidate key once"),
        (1 <= len(spec.seeds) <= MAX_SEEDS, f"1 to {MAX_SEEDS} seeds"),
        (len(set(spec.seeds)) == len(spec.seeds), "each seed once"),
        (all(0 <= s <= MAX_SEED for s in spec.seeds), f"seeds from 0 to {MAX_SEED}"),
        (1 <= len(spec.rungs) <= MAX_RUNGS, f"1 to {MAX_RUNGS} rungs"),
        (all(r > 0 for r in spec.rungs), "rungs above 0 FLOPs"),
        (2 <= spec.eta <= 1_000 and 1 <= spec.keep <= MAX_CANDIDATES, "eta ≥ 2 and keep ≥ 1"),
        (0 < spec.budget_fraction <= 1 and spec.budget_flops > 0, "a budget above 0"),
        (all(k in keys for c in spec.candidates for k in c.controls), "controls of its keys"),
    )
    for ok, want in bounds:
        if not ok:
            raise SpecError(f"race: expected {want}")
    derived = [
        dataclasses.replace(
            c,
            plan_files=[str(plan_path(race_dir, c.key, s)) for s in spec.seeds],
            runs=[str(run_path(race_dir, c.key, s)) for s in spec.seeds],
        )
        for c in spec.candidates
    ]
    return dataclasses.replace(spec, candidates=derived)


def load_spec(race_dir: Path) -> RaceSpec | None:
    """The race stored in `race_dir` (None when it holds none), checked, its paths derived."""
    path = race_dir / SPEC_FILE
    try:
        raw = read_bytes(path, MAX_SPEC_BYTES)
    except FileNotFoundError:
        return None
    except UnsafePath as exc:
        raise unsafe(exc) from None
    except OSError as exc:
        raise RaceDirError(f"{path}: cannot be read ({exc.strerror or exc}); {FIX}") from None
    try:
        data = loads_bounded(raw.decode("utf-8"), str(path))
        return _spec(data, race_dir)
    except UnicodeDecodeError:
        raise RaceDirError(f"{path}: is not UTF-8 text; {FIX}") from None
    except SourceFileError as exc:
        raise RaceDirError(f"{exc}; {FIX}") from None
    except SpecError as exc:
        raise RaceDirError(
            f"{path}: {exc}; it is not a race.json growcockpit wrote ({FIX})"
        ) from None


def save_spec(race_dir: Path, spec: RaceSpec) -> None:
    """Write `race.json` (the race directory made if need be), never through a link."""
    make_root(race_dir)
    write_file(race_dir / SPEC_FILE, spec.to_json().encode("utf-8"))
