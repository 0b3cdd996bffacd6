"""Validation answers from the plan alone; `check_environment` is the one step that asks the
disk (data source, tokenizer, init_from), and its answer is listed with validation's, in
document order, at every command that passes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_paths import TINY_TOML

from growcockpit.plan import PlanError, loads_plan, plan_problems, validate_plan
from growcockpit.plan.data_rules import merge_environment
from growcockpit.plan.environment import check_environment


def _text(source: str, tokenizer: str, init_from: str | None = None) -> str:
    text = TINY_TOML.read_text(encoding="utf-8")
    text = text.replace('source = "builtin"', f'source = "{source}"')
    text = text.replace('tokenizer = "train:2000"', f'tokenizer = "{tokenizer}"')
    if init_from is not None:
        text = text.replace("[model]\n", f'[model]\ninit_from = "{init_from}"\n', 1)
    return text


def test_validation_leaves_what_is_on_disk_to_check_environment(tmp_path: Path) -> None:
    text = _text(f"{tmp_path}/none/*.txt", f"{tmp_path}/tok", f"{tmp_path}/nowhere")
    plan = loads_plan(text, validate=False)
    assert plan_problems(plan) == []  # the plan's own rules hold
    validate_plan(plan)  # raises nothing: it never looks
    found = plan_problems(plan, "p.toml", text, environment=check_environment(plan))
    assert [(e.key, e.line) for e in found] == [
        ("model.init_from", 6),
        ("data.source", 15),
        ("data.tokenizer", 16),
    ]
    assert "no such directory" in found[0].problem
    assert "no .txt/.jsonl/.parquet files found there" in found[1].problem
    assert "no such file or directory" in found[2].problem
    with pytest.raises(PlanError) as err:  # a loader given the step raises the first
        loads_plan(text, "p.toml", environment=check_environment)
    assert str(err.value) == str(found[0])


def test_a_value_the_rules_refuse_is_not_looked_for_and_the_order_holds(tmp_path: Path) -> None:
    plan = loads_plan(_text("", "train:0"), validate=False)
    assert check_environment(plan) == []  # an empty source, a vocabulary of 0: nothing to read
    assert [e.key for e in plan_problems(plan)] == ["data.source", "data.tokenizer"]
    # a source only the disk refuses still comes before a tokenizer the rules refuse
    plan = loads_plan(_text(f"{tmp_path}/none.txt", "train:0"), validate=False)
    assert [k for k, _ in check_environment(plan)] == ["data.source"]
    listed = plan_problems(plan, environment=check_environment(plan))
    assert [e.key for e in listed] == ["data.source", "data.tokenizer"]


def test_an_older_answer_does_not_echo_a_value_the_rules_refuse() -> None:
    """The designer hands in its last answer, of the value before this edit."""
    rules = [("data.source", "is empty")]
    older = [("data.source", "no such file"), ("data.tokenizer", "not cached")]
    assert merge_environment(rules, older) == [
        ("data.source", "is empty"),
        ("data.tokenizer", "not cached"),
    ]


def test_a_task_source_reads_nothing(tmp_path: Path) -> None:
    plan = loads_plan(_text("task:hops", "fixed").replace('"bert"', '"gpt2"'), validate=False)
    assert check_environment(plan) == []
    assert plan_problems(plan) == []
