"""Write plans: to a JSON-able dict, to TOML text, atomically to a file.

`dump_plan` writes every section key explicitly (a run's frozen copy should
not depend on defaults) and, per stage, the keys that say what the stage does
(name, enter, layers, train, steps) plus any other key that differs from its
default. `save_plan(..., original_text=...)` edits the existing file in place
with tomlkit so its comments and layout survive. `[budget]` and `fill` are
saved as written; the fill stage's fitted steps never are (they follow the
budget when the plan is loaded again).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import AoT, Table

from growcockpit.plan.budget import fill_index
from growcockpit.plan.load import SECTIONS
from growcockpit.plan.operators import OPERATORS
from growcockpit.plan.types import Plan, Stage

_ALWAYS_STAGE_KEYS = ("name", "enter", "layers", "train", "steps")
_STAGE_DEFAULTS: dict[str, Any] = {
    f.name: f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
    for f in dataclasses.fields(Stage)
    if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
}


def _drop_none(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}


def _stage_dict(stage: Stage) -> dict[str, Any]:
    return _drop_none(dataclasses.asdict(stage))


def _event_stage_dict(stage: Stage) -> dict[str, Any]:
    out = _stage_dict(stage)
    if not stage.fill:  # plans without a budget keep their pre-budget dict
        del out["fill"]
    if not stage.candidates:  # nor do plans without a probe
        del out["candidates"]
    return out


def _stage_defaults(index: int) -> dict[str, Any]:
    return {**_STAGE_DEFAULTS, "enter": "init"} if index == 0 else _STAGE_DEFAULTS


# sections the dict leaves out while they hold their defaults: a cockpit older than the
# section then still reads the plan of a run that does not use it, and compares it unchanged
QUIET_SECTIONS = ("samples",)


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The plan as plain dicts/lists (JSON-able), None values left out."""
    out: dict[str, Any] = {"name": plan.name, "description": plan.description, "seed": plan.seed}
    for key in SECTIONS:
        value = getattr(plan, key)
        if key not in QUIET_SECTIONS or value != type(value)():
            out[key] = _drop_none(dataclasses.asdict(value))
    if plan.budget is not None:
        out["budget"] = _drop_none(dataclasses.asdict(plan.budget))
    out["stages"] = [_event_stage_dict(s) for s in plan.stages]
    return out


def _compact_stage(index: int, stage: Stage, fitted: bool = False) -> dict[str, Any]:
    """The stage's keys for a fresh file; a fitted (fill) stage's steps are left out."""
    full = _stage_dict(stage)
    if fitted:
        del full["steps"]
    defaults = _stage_defaults(index)
    ordered = {k: full[k] for k in _ALWAYS_STAGE_KEYS if k in full}
    spec = OPERATORS.get(stage.enter)
    for key in spec.options if spec is not None else ():  # next to the operator they belong to
        if key in full:
            ordered[key] = full[key]
    ordered.update({k: v for k, v in full.items() if k not in ordered and v != defaults.get(k)})
    return ordered


def dump_plan(plan: Plan) -> str:
    """TOML text of `plan` (tomlkit): top-level keys, sections, [[stages]]."""
    doc = tomlkit.document()
    doc.add("name", plan.name)
    if plan.description:
        doc.add("description", plan.description)
    doc.add("seed", plan.seed)
    for key in SECTIONS:
        table = tomlkit.table()
        for name, value in _drop_none(dataclasses.asdict(getattr(plan, key))).items():
            table.add(name, value)
        doc.add(tomlkit.nl())
        doc.add(key, table)
    if plan.budget is not None:
        doc.add(tomlkit.nl())
        doc.add("budget", _table_of(_drop_none(dataclasses.asdict(plan.budget))))
    stages = tomlkit.aot()
    fill = fill_index(plan)
    for index, stage in enumerate(plan.stages):
        table = tomlkit.table()
        for name, value in _compact_stage(index, stage, index == fill).items():
            table.add(name, value)
        stages.append(table)
    doc.add(tomlkit.nl())
    doc.add("stages", stages)
    return tomlkit.dumps(doc)


def _table_of(data: dict[str, Any]) -> Any:
    table = tomlkit.table()
    for name, value in data.items():
        table.add(name, value)
    return table


def _merge(
    table: Any, new: dict[str, Any], defaults: dict[str, Any], keep: tuple[str, ...] = ()
) -> None:
    """Update a tomlkit table in place: change, add (if not default), drop.

    Keys in `keep` stay exactly as written (a fill stage's steps: fitted, not saved)."""
    for key in list(table.keys()):
        if key not in new and key not in keep:
            del table[key]
    for key, value in new.items():
        if key in keep:
            continue
        if key in table:
            if table[key] != value:
                table[key] = value
        elif defaults.get(key, object()) != value:
            table[key] = value


def _plan_of(text: str) -> Plan | None:
    from growcockpit.plan.load import _plan_or_problems

    try:
        return _plan_or_problems(tomllib.loads(text))[0]
    except tomllib.TOMLDecodeError:
        return None


def update_text(original_text: str, plan: Plan, sections: tuple[str, ...] = ()) -> str:
    """`original_text` edited to describe `plan`, keeping comments and layout.

    Falls back to `dump_plan(plan)` when the original cannot be edited in
    place (not TOML, stages not written as [[stages]], or the edit would not
    read back as `plan`).
    """
    try:
        doc = tomlkit.parse(original_text)
    except Exception:
        return dump_plan(plan)
    data = plan_to_dict(plan)
    data.update({key: _drop_none(dataclasses.asdict(getattr(plan, key))) for key in SECTIONS})
    for key in ("name", "description", "seed"):
        _merge_top(doc, key, data[key], {"description": "", "seed": 0})
    for key, cls in SECTIONS.items():
        defaults = dataclasses.asdict(cls())
        if key in doc and isinstance(doc[key], Table):
            _merge(doc[key], data[key], defaults)
        elif key in doc:
            return dump_plan(plan)
        elif data[key] != _drop_none(defaults) or key in sections:
            table = tomlkit.table()
            for name, value in data[key].items():
                table.add(name, value)
            doc.add(key, table)
    if plan.budget is None:
        if "budget" in doc:
            del doc["budget"]
    elif isinstance(doc.get("budget"), Table):
        _merge(doc["budget"], data["budget"], {})
    elif "budget" in doc:
        return dump_plan(plan)
    else:
        doc.add("budget", _table_of(data["budget"]))
    stages = doc.get("stages")
    if not isinstance(stages, AoT):
        return dump_plan(plan)
    while len(stages) > len(plan.stages):
        del stages[len(stages) - 1]
    fill = fill_index(plan)
    for index, stage in enumerate(plan.stages):
        if index < len(stages):
            keep = ("steps",) if index == fill else ()
            _merge(stages[index], _stage_dict(stage), _stage_defaults(index), keep)
        else:
            table = tomlkit.table()
            for name, value in _compact_stage(index, stage, index == fill).items():
                table.add(name, value)
            stages.append(table)
    text = tomlkit.dumps(doc)
    return text if _plan_of(text) == plan else dump_plan(plan)


def _merge_top(doc: Any, key: str, value: Any, defaults: dict[str, Any]) -> None:
    if key in doc:
        if doc[key] != value:
            doc[key] = value
    elif defaults.get(key, object()) != value:
        doc[key] = value


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write `text` to `path` via a temporary file and os.replace."""
    path = Path(path)
    try:
        mode: int | None = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode if mode is not None else 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def save_plan(
    plan: Plan, path: str | Path, original_text: str | None = None, sections: tuple[str, ...] = ()
) -> None:
    """Write `plan` as TOML to `path` atomically (temp file + os.replace).

    With `original_text` (the file as it was loaded), the file is edited in
    place so comments survive; otherwise it is written fresh by `dump_plan`.
    The plan is not validated here (the editor may save a draft). `sections` are written
    even when the file left them out and they hold defaults (the designer's [model], once set).
    """
    text = dump_plan(plan) if original_text is None else update_text(original_text, plan, sections)
    atomic_write_text(path, text)
