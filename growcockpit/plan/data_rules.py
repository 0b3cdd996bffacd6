"""`[data]`'s and `model.init_from`'s rules that need no disk, for `validate_plan`.

Validation is pure: it answers from the plan alone, so it runs between two keystrokes
and on an interpreter without `datasets` or the corpus. What a source, a tokenizer or an
init_from directory holds on this machine is `check_environment`'s (plan/environment.py),
which checks only the values these rules let through. `merge_environment` puts its
answer where validation used to find it: after these rules, in the same key order.
"""

from __future__ import annotations

from collections.abc import Sequence

from growcockpit.plan.data_source import WORKS
from growcockpit.plan.init_from import KEY as INIT_FROM_KEY
from growcockpit.plan.task_source import is_task_source, task_problems
from growcockpit.plan.types import DataSpec, Plan

Problem = tuple[str, str]

# The order the data checks have always listed their problems in: the source (and its
# text column), then the tokenizer, then init_from's (whatever keys those name).
_GROUPS = {"data.source": 0, "data.text_column": 0, "data.tokenizer": 1, INIT_FROM_KEY: 2}


def source_rule_problems(spec: DataSpec) -> list[Problem]:
    """`data.source` and `data.text_column` given at all (what they name: on disk)."""
    if not spec.source.strip():
        return [("data.source", f'is empty; use "builtin" or {WORKS}')]
    if not spec.text_column.strip():
        return [("data.text_column", 'is empty; name the column that holds the text, e.g. "text"')]
    return []


def tokenizer_rule_problems(spec: DataSpec) -> list[Problem]:
    """`data.tokenizer` given, and "train:N" with a positive N (a path or hub id: on disk)."""
    name = spec.tokenizer
    if not name.strip():
        return [
            (
                "data.tokenizer",
                'is empty; use "train:<vocab>", a tokenizer directory, or a cached hub id',
            )
        ]
    vocab = name.split(":", 1)[1] if name.startswith("train:") else "1"
    if not vocab.isdigit() or int(vocab) < 1:
        return [
            (
                "data.tokenizer",
                f'"{name}" needs a positive vocabulary size; write e.g. "train:8000"',
            )
        ]
    return []


def trained_tokenizer(spec: DataSpec) -> bool:
    """A "train:N" tokenizer is trained by the run: nothing on disk to check."""
    return spec.tokenizer.startswith("train:")


def init_from_rule_problems(plan: Plan) -> list[Problem]:
    """`model.init_from` left empty (a directory it names: on disk)."""
    path = plan.model.init_from
    if path is not None and not path.strip():
        return [(INIT_FROM_KEY, "is empty; give a save_pretrained directory, or remove init_from")]
    return []


def data_rule_problems(plan: Plan) -> list[Problem]:
    """Every disk-free problem of `[data]` and `model.init_from`."""
    d = plan.data
    if is_task_source(d.source):  # generated: its whole check is disk-free
        found = task_problems(d, plan.model.family)
    else:
        found = source_rule_problems(d) + tokenizer_rule_problems(d)
    return found + init_from_rule_problems(plan)


def _group(key: str) -> int:
    return _GROUPS.get(key, 2)


def merge_environment(rules: list[Problem], environment: Sequence[Problem]) -> list[Problem]:
    """The rules' problems and `check_environment`'s answer in the order the data checks list
    them. A key group a rule already faults is not echoed by an (older) environment answer:
    the designer hands in its last one, which may be of the value before this edit."""
    faulted = {_group(key) for key, _ in rules if key in _GROUPS}
    kept = [(k, p) for k, p in environment if not (k in _GROUPS and _group(k) in faulted)]
    return sorted(rules + kept, key=lambda problem: _group(problem[0]))
