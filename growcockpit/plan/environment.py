"""`check_environment`: the one step that checks a plan against this machine's disk.

`validate_plan` answers from the plan alone. Whether what the plan names is here is
asked here, once, by each command that will read it: the data source (a file, a
directory, a glob, the `builtin` corpus package, a dataset in the local Hugging Face
or `datasets` cache), the tokenizer (a directory, a file, a cached hub id) and
`model.init_from`'s directory (its config against the plan's sizes). Its answer is a
list of (key, problem) pairs like validation's, handed to the validator
(`plan_problems(..., environment=...)`, `load_plan(..., environment=check_environment)`),
which lists them in document order with the rest, so every caller prints them the
same way. Standard library only, and never the network: a few KB of each thing read.
The designer runs it in a worker (never between two keystrokes).

`environment_warnings` answers what is used anyway but deserves a word (a FIFO beside
the data files, skipped): the same (key, text) pairs, which fail nothing.
"""

from __future__ import annotations

from growcockpit.plan.data_checks import (
    source_file_problems,
    source_file_warnings,
    tokenizer_file_problems,
)
from growcockpit.plan.data_rules import source_rule_problems, tokenizer_rule_problems
from growcockpit.plan.init_from import init_from_problems
from growcockpit.plan.task_source import is_task_source
from growcockpit.plan.types import Plan

Problem = tuple[str, str]


def check_environment(plan: Plan) -> list[Problem]:
    """What of `plan` is missing or unreadable here; checks only the values that pass the
    validator's rules (an empty source is validation's to report, once)."""
    d = plan.data
    found: list[Problem] = []
    if not is_task_source(d.source):  # a generated task reads nothing
        if not source_rule_problems(d):
            found += source_file_problems(d)
        if not tokenizer_rule_problems(d):
            found += tokenizer_file_problems(d)
    if plan.model.init_from is not None and plan.model.init_from.strip():
        found += init_from_problems(plan)
    return found


def environment_warnings(plan: Plan) -> list[Problem]:
    """What of `plan` this machine skips without failing, for `plan validate` to print after
    its "ok" (the backend's start-up says the same in the run's log)."""
    d = plan.data
    if is_task_source(d.source) or source_rule_problems(d):
        return []
    return source_file_warnings(d)
