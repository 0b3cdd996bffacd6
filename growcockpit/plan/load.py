"""Read plan files: TOML text or plain dicts to a typed, validated `Plan`.

Conversion is strict: unknown keys anywhere are errors that name the key and
list the valid ones, and values must have the field's type (an int is fine
where a float is expected; a bool is never an int). When the source text is
known, each error carries the line of its key.
Validation reads no disk; `environment=check_environment` (plan/environment.py) adds what
the plan names on this machine, listed with the rest in document order.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from growcockpit.plan.budget import apply_fit, fit_budget
from growcockpit.plan.convert import Problems, convert_table, convert_value, type_hints, type_name
from growcockpit.plan.convert import unknown_key_problem as unknown_key_problem
from growcockpit.plan.errors import PlanError
from growcockpit.plan.limits import (
    MAX_NESTING,
    dict_limit_problem,
    file_limit_problem,
    text_limit_problem,
)
from growcockpit.plan.locate import TomlLocator
from growcockpit.plan.types import (
    BudgetSpec,
    CheckpointSpec,
    DataSpec,
    DistributedSpec,
    LoggingSpec,
    MetricsSpec,
    ModelSpec,
    OptimSpec,
    Plan,
    SamplesSpec,
    Stage,
)

SECTIONS: dict[str, type[Any]] = {
    "model": ModelSpec,
    "data": DataSpec,
    "optim": OptimSpec,
    "metrics": MetricsSpec,
    "checkpoint": CheckpointSpec,
    "logging": LoggingSpec,
    "distributed": DistributedSpec,
    "samples": SamplesSpec,
}
_TOP_SCALARS = ("name", "description", "seed")
TOP_KEYS: tuple[str, ...] = ("name", "description", "seed", *SECTIONS, "budget", "stages")
REQUIRED_STAGE_KEYS: tuple[str, ...] = ("name", "layers", "steps")
_STAGE_HINTS = {
    "name": 'add name = "<unique stage name>"',
    "layers": "add layers = <depth after entering this stage>",
    "steps": "add steps = <training steps of this stage>",
}


def _raw_fill_indices(data: dict[str, Any]) -> set[int]:
    """Which raw stage tables fill the budget (their `steps` may be left out): those
    with fill = true, else the last one; none without a [budget]."""
    items = data.get("stages")
    if "budget" not in data or not isinstance(items, list) or not items:
        return set()
    marked = {
        i for i, item in enumerate(items) if isinstance(item, dict) and item.get("fill") is True
    }
    return marked or {len(items) - 1}


def _convert_stages(
    items: object, path: str, start_index: int, problems: Problems, fill: set[int] | None = None
) -> list[Stage] | None:
    if not isinstance(items, list):
        problems.append(
            (
                path,
                f"expected an array of tables, got {type_name(items)}; write each stage as a [[stages]] table",
            )
        )
        return None
    stages: list[Stage] = []
    ok = True
    for offset, item in enumerate(items):
        index = start_index + offset
        defaults: dict[str, Any] = {"enter": "init"} if index == 0 else {}
        required = REQUIRED_STAGE_KEYS
        if fill and index in fill:  # steps are fitted to the budget
            defaults["steps"] = 0
            required = tuple(k for k in required if k != "steps")
        stage = convert_table(
            Stage,
            item,
            f"{path}[{index}]",
            problems,
            required=required,
            hints=_STAGE_HINTS,
            defaults=defaults,
        )
        if stage is None:
            ok = False
        else:
            stages.append(stage)
    return stages if ok else None


def _errors(problems: Problems, source: str, text: str | None) -> list[PlanError]:
    locator = TomlLocator(text) if text is not None else None
    return [
        PlanError(problem, key=key, source=source, line=locator.line_of(key) if locator else None)
        for key, problem in problems
    ]


def _plan_or_problems(data: object) -> tuple[Plan | None, Problems]:
    problems: Problems = []
    if not isinstance(data, dict):
        return None, [
            ("", f"expected a table of plan keys, got {type_name(data)}; see sample_plans/")
        ]
    too_big = dict_limit_problem(data)  # before conversion, which walks every key and stage
    if too_big is not None:
        return None, [too_big]
    for key in data:
        if key not in TOP_KEYS:
            problems.append((str(key), unknown_key_problem(str(key), TOP_KEYS)))
    top: dict[str, Any] = {}
    top_types = type_hints(Plan)
    for key in _TOP_SCALARS:
        if key in data:
            good, value = convert_value(data[key], top_types[key], key, problems)
            if good:
                top[key] = value
    if "name" not in data:
        problems.append(
            ("name", 'missing required key "name"; add name = "<plan name>" at the top of the file')
        )
    sections: dict[str, Any] = {}
    for key, cls in SECTIONS.items():
        if key in data:
            sections[key] = convert_table(cls, data[key], key, problems)
    budget: BudgetSpec | None = None
    if "budget" in data:
        budget = convert_table(BudgetSpec, data["budget"], "budget", problems)
    stages: list[Stage] | None = None
    if "stages" not in data:
        problems.append(
            (
                "stages",
                'missing required key "stages"; add at least one [[stages]] table with name, layers and steps',
            )
        )
    else:
        stages = _convert_stages(data["stages"], "stages", 0, problems, _raw_fill_indices(data))
        if stages is not None and not data["stages"]:
            problems.append(
                (
                    "stages",
                    "no stages; add at least one [[stages]] table with name, layers and steps",
                )
            )
    if problems or stages is None or any(v is None for v in sections.values()):
        return None, problems
    plan = Plan(stages=stages, budget=budget, **top, **sections)
    _default_seq_len(plan, data)
    apply_fit(plan, fit_budget(plan))
    return plan, problems


def _default_seq_len(plan: Plan, data: dict[str, Any]) -> None:
    """data.seq_len left out: 128, or the model's max_seq_len when that is shorter, so a
    plan that only sets a small max_seq_len is valid as written."""
    written = data.get("data")
    if isinstance(written, dict) and "seq_len" in written:
        return
    if plan.model.max_seq_len >= 1:
        plan.data.seq_len = min(DataSpec().seq_len, plan.model.max_seq_len)


MODEL_MISSING = 'missing; add [model] with family = "bert", "gpt2" or "llama" and its sizes'


def _model_problems(data: object) -> Problems:
    """A plan to train or validate must say which model: without [model] it would silently
    be the default one. Decoding (an event's plan, an editor's draft) does not ask. The
    error has no line: the table is not in the file."""
    if isinstance(data, dict) and "model" not in data:
        return [("[model]", MODEL_MISSING)]
    return []


def model_written(text: str | None) -> bool:
    """Whether the plan text has a [model] table (a text that is not TOML: no)."""
    if text is None:
        return True  # written fresh by dump_plan, which writes every section
    try:
        return "model" in tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return False


# `check_environment` (plan/environment.py), the designer's last answer of it, or none
Environment = Callable[[Plan], Sequence[tuple[str, str]]] | None


def edited_plan_problems(
    plan: Plan,
    source: str,
    *,
    model_set: bool,
    file_checks: Environment = None,
) -> list[PlanError]:
    """The designer's validator: what `plan validate` says of the file it saves, so the two
    agree. That is `plan_problems`, and the [model] rule (`_model_problems`) while the file
    has no [model] and no model key was set since (`model_set`). `file_checks`: the
    designer's last answer of `check_environment`, which it runs in a worker."""
    missing = [] if model_set else _errors(_model_problems({}), source, None)
    return missing + _validate(plan, source, None, file_checks)


def _validate(
    plan: Plan, source: str, text: str | None, environment: Environment
) -> list[PlanError]:
    from growcockpit.plan.validate import plan_problems

    found = environment(plan) if environment is not None else ()
    return plan_problems(plan, source=source, text=text, environment=found)


def plan_from_dict(
    data: dict[str, Any],
    source: str = "<dict>",
    text: str | None = None,
    *,
    validate: bool = True,
    environment: Environment = None,
) -> Plan:
    """Convert parsed TOML (or JSON) to a `Plan` and validate it.

    Raises the first `PlanError`; with `text`, errors carry line numbers. The
    first stage's `enter` defaults to "init" when omitted. With
    validate=False only conversion is checked (keys, types, required keys),
    so an editor can open a draft and list its problems with `plan_problems`;
    validation also requires the [model] table (`_model_problems`). `environment`
    (`check_environment`) is run on the plan and its problems raised with the rest.
    """
    plan, problems = _plan_or_problems(data)
    if problems or plan is None:
        raise _errors(problems, source, text)[0]
    if validate:
        errors = _errors(_model_problems(data), source, None)
        errors += _validate(plan, source, text, environment)
        if errors:
            raise errors[0]
    return plan


def dict_problems(
    data: object,
    source: str = "<dict>",
    text: str | None = None,
    environment: Environment = None,
) -> list[PlanError]:
    """All problems of a plan dict: conversion ones, else validation ones (with
    `environment`: and its problems)."""
    plan, problems = _plan_or_problems(data)
    if problems or plan is None:
        return _errors(problems, source, text)
    return _errors(_model_problems(data), source, None) + _validate(plan, source, text, environment)


_TOML_LINE = re.compile(r"\(at line (\d+), column (\d+)\)")


def _parse_toml(text: str, source: str) -> dict[str, Any]:
    bounded = text_limit_problem(text)  # before tomllib: it recurses per level, slows per part
    if bounded is not None:
        raise PlanError(bounded[1], source=source, line=bounded[0])
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise PlanError(
            f"nested too deeply (limit {MAX_NESTING}, MAX_NESTING); flatten the value",
            source=source,
        ) from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = _TOML_LINE.search(message)
        line = int(match.group(1)) if match else None
        what = _TOML_LINE.sub("", message).strip() or "invalid TOML"
        where = f" at column {match.group(2)}" if match else ""
        raise PlanError(
            f"TOML syntax error{where}: {what}; fix the syntax (strings need quotes, one key = value per line)",
            source=source,
            line=line,
        ) from None


def text_problems(
    text: str, source: str = "<string>", environment: Environment = None
) -> list[PlanError]:
    """Every problem of a plan text (the editor shows them all); [] if valid."""
    try:
        data = _parse_toml(text, source)
    except PlanError as exc:
        return [exc]
    return dict_problems(data, source=source, text=text, environment=environment)


def loads_plan(
    text: str, source: str = "<string>", *, validate: bool = True, environment: Environment = None
) -> Plan:
    """Parse and validate plan TOML text; raises `PlanError`."""
    data = _parse_toml(text, source)
    return plan_from_dict(data, source, text, validate=validate, environment=environment)


def read_plan_text(path: str | Path) -> str:
    """A plan file's text; raises `PlanError` naming the file and the fix."""
    path = Path(path)
    source = str(path)
    try:
        unfit = file_limit_problem(path)
        if unfit:
            raise PlanError(unfit, source=source)
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanError(
            "file not found; check the path (sample plans are in sample_plans/)", source=source
        ) from None
    except IsADirectoryError:
        raise PlanError(
            "is a directory, not a plan file; give the path of a .toml file", source=source
        ) from None
    except UnicodeDecodeError as exc:
        raise PlanError(
            f"not UTF-8 text ({exc.reason}); save the plan as UTF-8", source=source
        ) from None
    except OSError as exc:
        raise PlanError(
            f"cannot read ({exc.strerror}); check the path and permissions", source=source
        ) from None


def load_plan(path: str | Path, *, validate: bool = True, environment: Environment = None) -> Plan:
    """Read, parse and validate a plan file; raises `PlanError`.

    validate=False skips the semantic checks (see `plan_from_dict`); `environment`:
    `check_environment`, for a caller about to use what the plan names.
    """
    return loads_plan(
        read_plan_text(path), source=str(path), validate=validate, environment=environment
    )


def plan_file_problems(
    path: str | Path, environment: Environment = None
) -> tuple[Plan | None, list[PlanError]]:
    """A plan file and every problem it has (`plan validate` and the designer list them all):
    the plan when it has none, else None and the problems in document order. `plan
    validate` passes `environment=check_environment`."""
    try:
        text = read_plan_text(path)
    except PlanError as exc:
        return None, [exc]
    problems = text_problems(text, source=str(path), environment=environment)
    if problems:
        return None, problems
    return loads_plan(text, source=str(path), validate=False), []


def parse_stages(
    items: list[dict[str, Any]], source: str = "<edit_stages>", start_index: int = 0
) -> list[Stage]:
    """Convert stage tables (e.g. from an `edit_stages` command) to `Stage`s.

    Only conversion is checked here (keys, types, required keys); the stages
    are validated in context by `replace_remaining_stages`. `start_index` is
    the plan index of the first item, used in key paths ("stages[2].layers")
    and so that only a stage at index 0 defaults to enter = "init". A stage
    with fill = true may leave out `steps` (they are fitted to the budget).
    """
    problems: Problems = []
    fill = {
        start_index + i
        for i, item in enumerate(items)
        if isinstance(item, dict) and item.get("fill") is True
    }
    stages = _convert_stages(items, "stages", start_index, problems, fill)
    if problems or stages is None:
        raise _errors(problems, source, None)[0]
    return stages
