"""`section.field=value` overrides: one parser for `train --set`, `plan show --set` and `race --vary`.

An override edits the plan's raw tables before conversion, so the result is checked
exactly like a plan file (types, ranges, operators, the budget fit) and a later key
such as a fill stage's steps follows. Keys are checked here first, so a typo is
reported against the `--set` that made it (`--set optim.lrr=1: unknown key "lrr";
did you mean "lr"? …`), not against a file line it has none.

Values are TOML values (`2e-3`, `true`, `"top"`, `[1, 2]`); a bare word that is no
TOML value is a string, so `optim.schedule=cosine` needs no quotes. A step-count key
also takes a duration (`stages.0.steps=1e6tok`, `=100ba`, `=0.5dur`: plan/durations.py),
converted with the plan's own batch, sequence length and total steps. Stdlib only.
"""

from __future__ import annotations

import copy
import dataclasses
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from growcockpit.plan.durations import (
    FORMS,
    DurationError,
    duration_steps,
    is_step_key,
    parse_duration,
)
from growcockpit.plan.errors import PlanError
from growcockpit.plan.load import SECTIONS, TOP_KEYS, Environment, unknown_key_problem
from growcockpit.plan.types import BudgetSpec, Plan, Stage

MAX_OVERRIDE_CHARS = 1000  # one --set; a plan value is never longer
_TABLES: dict[str, type[Any]] = {**SECTIONS, "budget": BudgetSpec}
_SCALARS = tuple(k for k in TOP_KEYS if k not in _TABLES and k != "stages")

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Override:
    """One `key=value`: the key as written, its path into the plan tables, the parsed value."""

    text: str
    key: str
    path: Path_
    value: Any

    @property
    def where(self) -> str:
        return f"--set {self.text}"


def _fields(cls: type[Any]) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def parse_value(text: str) -> Any:
    """A TOML value, or the text itself as a string when it is no TOML value."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text.strip()


def _fail(where: str, problem: str) -> PlanError:
    return PlanError(problem, source=where)


def key_path(key: str, where: str = "") -> Path_:
    """`optim.lr` → ("optim", "lr"); `stages.0.steps` → ("stages", 0, "steps"); checked
    against the plan's tables (unknown keys name the valid ones)."""
    where = where or f"--set {key}"
    parts = key.strip().split(".")
    head = parts[0]
    if head in _SCALARS:
        if len(parts) != 1:
            raise _fail(where, f'"{head}" is a plain value, not a table; write {head}=VALUE')
        return (head,)
    if head in _TABLES:
        if len(parts) != 2:
            raise _fail(
                where, f"expected {head}.FIELD=VALUE, e.g. {head}.{_fields(_TABLES[head])[0]}=…"
            )
        if parts[1] not in _fields(_TABLES[head]):
            raise _fail(where, unknown_key_problem(parts[1], _fields(_TABLES[head])))
        return (head, parts[1])
    if head == "stages":
        if len(parts) != 3 or not parts[1].isdigit() or len(parts[1]) > 6:
            raise _fail(
                where,
                "expected stages.N.FIELD=VALUE with N the 0-based stage index, e.g. stages.0.steps=100",
            )
        if parts[2] not in _fields(Stage):
            raise _fail(where, unknown_key_problem(parts[2], _fields(Stage)))
        return ("stages", int(parts[1]), parts[2])
    raise _fail(where, unknown_key_problem(head, TOP_KEYS))


def parse_override(text: str) -> Override:
    """`section.field=value` → `Override`; a PlanError naming the `--set` otherwise."""
    where = f"--set {text[:80]}"
    if len(text) > MAX_OVERRIDE_CHARS:
        raise _fail(where, f"longer than {MAX_OVERRIDE_CHARS} characters; shorten the value")
    key, eq, raw = text.partition("=")
    if not eq or not key.strip():
        raise _fail(where, "expected KEY=VALUE, e.g. optim.lr=2e-3 or stages.0.steps=100")
    key = key.strip()
    return Override(text, key, key_path(key, where), parse_value(raw))


def _is_duration(ov: Override) -> bool:
    return isinstance(ov.value, str) and is_step_key(ov.key)


def resolve_durations(data: dict[str, Any], overrides: Sequence[Override]) -> list[Override]:
    """`overrides` with every duration on a step-count key turned into its steps, sized by
    the plan with the other overrides applied; a PlanError naming the `--set` otherwise."""
    timed = [ov for ov in overrides if _is_duration(ov)]
    if not timed:
        return list(overrides)
    from growcockpit.plan.load import plan_from_dict

    plain = [ov for ov in overrides if not _is_duration(ov)]
    try:
        base = plan_from_dict(apply_overrides(data, plain))
    except PlanError as exc:
        raise _blame(exc, plain) from None
    o = base.optim
    tokens = o.batch_size * o.grad_accum_steps * base.data.seq_len
    out = []
    for ov in overrides:
        if not _is_duration(ov):
            out.append(ov)
            continue
        d = parse_duration(str(ov.value))
        if d is None:
            raise _fail(ov.where, f"{ov.key} is a step count: {FORMS}")
        try:
            steps = duration_steps(d, tokens_per_step=tokens, total_steps=base.total_steps)
        except DurationError as exc:
            raise _fail(ov.where, str(exc)) from None
        out.append(dataclasses.replace(ov, value=steps))
    return out


def apply_overrides(data: dict[str, Any], overrides: Iterable[Override]) -> dict[str, Any]:
    """A copy of the raw plan tables `data` with each override set, in order (durations
    on step-count keys converted first: `resolve_durations`)."""
    out = copy.deepcopy(data)
    for ov in resolve_durations(data, list(overrides)):
        if ov.path[0] == "stages":
            stages = out.get("stages")
            index = ov.path[1]
            assert isinstance(index, int)
            count = len(stages) if isinstance(stages, list) else 0
            if not isinstance(stages, list) or index >= count:
                raise _fail(
                    ov.where,
                    f"the plan has {count} stages (stages.0 … stages.{max(count - 1, 0)}); "
                    "give an existing stage index",
                )
            table = stages[index]
        elif len(ov.path) == 1:
            out[str(ov.path[0])] = ov.value
            continue
        else:
            table = out.setdefault(str(ov.path[0]), {})
        if not isinstance(table, dict):
            raise _fail(ov.where, f"{ov.path[0]} is not a table in the plan; fix the plan file")
        table[str(ov.path[-1])] = ov.value
    return out


def _dotted(key: str) -> str:
    """PlanError key paths write stages[1].x; overrides write stages.1.x."""
    return key.replace("[", ".").replace("]", "")


def _blame(exc: PlanError, overrides: Sequence[Override]) -> PlanError:
    """A problem with a key an override set is reported against that `--set`."""
    hit = [ov for ov in overrides if _dotted(exc.key) == ov.key]
    if not hit:
        return exc
    return PlanError(exc.problem, key=exc.key, source=hit[-1].where)


def overridden_plan(
    data: dict[str, Any],
    sets: Sequence[str],
    source: str,
    text: str | None = None,
    environment: Environment = None,
) -> Plan:
    """The plan of raw tables `data` with `sets` applied, converted and validated (with
    `environment`, `check_environment`: against this machine too)."""
    from growcockpit.plan.load import plan_from_dict

    overrides = [parse_override(s) for s in sets]
    changed = apply_overrides(data, overrides)
    try:
        return plan_from_dict(changed, source=source, text=text, environment=environment)
    except PlanError as exc:
        raise _blame(exc, overrides) from None


def load_plan_with(
    path: str | Path, sets: Sequence[str], environment: Environment = None
) -> tuple[Plan, str]:
    """`load_plan(path)` with `sets` applied; also the text to freeze in a run directory
    (the file itself when nothing is overridden). `environment`: see `overridden_plan`."""
    from growcockpit.plan.load import _parse_toml, load_plan

    plan = load_plan(path, environment=environment) if not sets else None
    text = Path(path).read_text(encoding="utf-8")
    if plan is not None:
        return plan, text
    data = _parse_toml(text, str(path))
    plan = overridden_plan(data, sets, str(path), text, environment)
    from growcockpit.plan.save import update_text

    return plan, update_text(text, plan)
