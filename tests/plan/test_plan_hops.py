"""Plan keys of the k-hop task (`data.source = "task:hops"`): one-line errors at the key's line."""

from __future__ import annotations

from pathlib import Path

import pytest

from growcockpit.plan import PlanError, loads_plan
from growcockpit.plan.cost import vocab_size

SAMPLE = Path(__file__).resolve().parents[2] / "sample_plans" / "cpu-hops-baseline.toml"


def _with(old: str, new: str) -> str:
    text = SAMPLE.read_text()
    assert text.count(old) == 1, old
    return text.replace(old, new)


def _error(text: str) -> str:
    with pytest.raises(PlanError) as info:
        loads_plan(text, source="hops.toml")
    message = str(info.value)
    assert "\n" not in message
    return message


def test_the_sample_is_valid_and_its_vocabulary_is_fixed() -> None:
    plan = loads_plan(SAMPLE.read_text())
    assert plan.data.source == "task:hops" and plan.data.hops == 4 and plan.data.alphabet == 4
    assert vocab_size(plan) == 5  # the alphabet + end-of-text: what the FLOPs count uses


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(needle))


@pytest.mark.parametrize(
    ("old", "new", "key", "fix"),
    [
        ("hops = 4 ", "hops = 0 ", "data.hops", "use 1 to 64"),
        ("alphabet = 4 ", "alphabet = 1 ", "data.alphabet", "use 2 to 64"),
        ("alphabet = 4 ", "alphabet = 500 ", "data.alphabet", "use 2 to 64"),
        ('source = "task:hops"\n', 'source = "task:sort"\n', "data.source", '"task:hops"'),
        ("seq_len = 64 ", "seq_len = 2 ", "data.seq_len", "≥ 3"),
    ],
)
def test_bad_task_keys_name_the_key_its_line_and_the_fix(
    old: str, new: str, key: str, fix: str
) -> None:
    text = _with(old, new)
    message = _error(text)
    assert message.startswith(f"hops.toml:{line_of(text, new.split(' =')[0])}: {key}: ")
    assert fix in message


def test_a_masked_lm_is_refused_with_the_families_that_work() -> None:
    text = _with('family = "gpt2"', 'family = "bert"')
    message = _error(text)
    assert "data.source" in message and "causal task" in message and '"gpt2"' in message


def test_a_tokenizer_other_than_the_fixed_one_is_refused() -> None:
    text = _with("seq_len = 64 ", 'tokenizer = "train:4000"\nseq_len = 64 ')
    message = _error(text)
    assert "data.tokenizer" in message and 'tokenizer = "fixed"' in message
    loads_plan(_with("seq_len = 64 ", 'tokenizer = "fixed"\nseq_len = 64 '))


def test_plan_show_says_what_the_task_is() -> None:
    from growcockpit.plan.show import format_plan

    text = format_plan(loads_plan(SAMPLE.read_text()))
    assert "task:hops (k = 4 hops, alphabet 4), fixed vocabulary 5" in text
    assert "train:8000" not in text
