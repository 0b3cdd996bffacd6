"""What each plan-section form shows: its fields, their kinds, choices and help.

Derived from the plan's dataclasses, so a new plan key shows up in the
designer by itself; `[model]` keys that only some families take are listed by
`family_only_keys` so the form can hide them for the others.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any

from growcockpit.plan.families import FAMILY_FACTS, FAMILY_MODEL_KEYS
from growcockpit.plan.types import FAMILIES, OPTIMIZERS, SCHEDULES


@dataclass(frozen=True)
class Field:
    key: str  # attribute name (stage) or key path suffix (section)
    label: str
    kind: str  # str | int | float | opt_int | opt_float | opt_str | choice | bool | opt_bool
    choices: tuple[str, ...] = ()
    help: str = ""


DEFAULT_CHOICE = "(default)"

SECTION_CHOICES: dict[str, tuple[str, ...]] = {
    "model.family": FAMILIES,
    "optim.name": OPTIMIZERS,
    "optim.schedule": SCHEDULES,
}
SECTION_HELP: dict[str, str] = {
    "model.init_from": "a save_pretrained dir, e.g. runs/<id>/final; empty: fresh weights",
    "model.num_kv_heads": "key/value heads (grouped-query); empty: one per head",
    "model.rope_theta": "rotary base; empty: 10000",
    "model.rms_norm_eps": "RMSNorm epsilon; empty: 1e-6",
    "data.source": "builtin, a save_to_disk dir, .arrow/.parquet/.jsonl/.txt files (docs/data.md)",
    "data.text_column": "the field holding the text (Arrow, Parquet, JSONL)",
    "data.tokenizer": "train:N, a save_pretrained dir, or a hub id in the local cache",
    "budget.baseline_steps": "N: the compute of N full-depth steps",
    "budget.minutes": "wall time on this machine (needs unit ms)",
    "budget.unit_ms": "ms per cost unit: `plan show --calibrate`",
}
SECTION_TITLES: dict[str, str] = {
    "budget": "[budget]: one of baseline steps or minutes; the fill stage's steps are fitted "
    "to it (all empty: no budget, every stage trains its own steps)",
}


def section_fields(section: str, spec: Any) -> tuple[Field, ...]:
    if section == "plan":
        return (
            Field("name", "name", "str"),
            Field("description", "about", "str"),
            Field("seed", "seed", "int"),
        )
    hints = typing.get_type_hints(type(spec))
    out = []
    for f in dataclasses.fields(spec):
        tp = hints[f.name]
        choices = SECTION_CHOICES.get(f"{section}.{f.name}")
        if choices:
            kind = "choice"
        elif tp is bool:
            kind = "bool"
        elif tp is int:
            kind = "int"
        elif tp is float:
            kind = "float"
        elif tp == int | None:
            kind = "opt_int"
        elif tp == float | None:
            kind = "opt_float"
        elif tp == str | None:
            kind = "opt_str"
        elif tp == bool | None:
            kind, choices = "opt_bool", (DEFAULT_CHOICE, "true", "false")
        else:
            kind = "str"
        help_ = SECTION_HELP.get(f"{section}.{f.name}", "")
        out.append(Field(f.name, f.name.replace("_", " "), kind, choices or (), help_))
    return tuple(out)


def family_keys(family: str) -> tuple[str, ...]:
    """The family-only [model] keys `family` takes."""
    facts = FAMILY_FACTS.get(family)
    return tuple(facts.model_keys) if facts is not None else ()


def family_only_keys(family: str) -> tuple[str, ...]:
    """The family-only [model] keys `family` does not take (hidden for it)."""
    return tuple(k for k in FAMILY_MODEL_KEYS if k not in family_keys(family))
