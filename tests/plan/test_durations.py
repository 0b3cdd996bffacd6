"""Composer-style durations on step-count keys (plan/durations.py, through the override
parser that `train --set`, `plan show --set` and `race --vary` share)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from repo_paths import REPO

from growcockpit.plan import PlanError
from growcockpit.plan.durations import (
    Duration,
    DurationError,
    duration_steps,
    is_step_key,
    parse_duration,
)
from growcockpit.plan.load import _parse_toml
from growcockpit.plan.overrides import overridden_plan

PLAN = REPO / "sample_plans" / "cpu-gpt2-zero.toml"  # batch 16 × seq 128: 2048 tokens a step
TEXT = PLAN.read_text(encoding="utf-8")
DATA = _parse_toml(TEXT, str(PLAN))


def plan_with(*sets: str):  # type: ignore[no-untyped-def]
    return overridden_plan(DATA, list(sets), str(PLAN), TEXT)


@given(st.integers(1, 10**9))
def test_batches_are_steps(n: int) -> None:
    d = parse_duration(f"{n}ba")
    assert d == Duration(float(n), "ba")
    assert duration_steps(d, tokens_per_step=2048, total_steps=1) == n


@given(st.integers(1, 10**6), st.integers(1, 10**5))
def test_tokens_of_whole_steps_are_those_steps(steps: int, per_step: int) -> None:
    d = parse_duration(f"{steps * per_step}tok")
    assert d is not None
    assert duration_steps(d, tokens_per_step=per_step, total_steps=1) == steps


@given(st.floats(1e-6, 1.0), st.integers(1, 10**6))
def test_a_share_is_at_least_one_step_and_at_most_the_total(share: float, total: int) -> None:
    d = parse_duration(f"{share!r}dur")
    assert d is not None and d.amount == share
    steps = duration_steps(d, tokens_per_step=1, total_steps=total)
    assert 1 <= steps <= total
    assert abs(steps - share * total) <= 0.5 or steps == 1


@given(st.text(max_size=20))
def test_text_without_a_unit_is_no_duration(text: str) -> None:
    if not text.strip().endswith(("ba", "tok", "dur")):
        assert parse_duration(text) is None


def test_forms_read() -> None:
    assert parse_duration("1e6tok") == Duration(1e6, "tok")
    assert parse_duration(" .5dur ") == Duration(0.5, "dur")
    assert parse_duration("2.5E3ba") == Duration(2500.0, "ba")
    for bad in ("ba", "1e6", "-5ba", "5 steps", "1e6tokens", "0x10ba"):
        assert parse_duration(bad) is None, bad
    assert is_step_key("stages.0.steps") and is_step_key("optim.warmup_steps")
    assert not is_step_key("optim.lr") and not is_step_key("stages.0.layers")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("0ba", "positive"),
        ("1.5ba", "batches are whole"),
        ("10tok", "less than one step (2048 tokens a step"),
        ("2dur", "at most 1dur"),
        ("1e999tok", "positive"),
    ],
)
def test_bad_durations_say_why(text: str, says: str) -> None:
    d = parse_duration(text)
    assert d is not None
    with pytest.raises(DurationError, match=re.escape(says)):
        duration_steps(d, tokens_per_step=2048, total_steps=100)


def test_overrides_convert_with_the_plans_own_sizes() -> None:
    assert plan_with("stages.0.steps=100ba").stages[0].steps == 100
    assert plan_with("stages.0.steps=1e6tok").stages[0].steps == round(1e6 / 2048)
    # the same tokens at half the batch: twice the steps (the other override counts)
    half = plan_with("optim.batch_size=8", "budget.baseline_steps=1200", "stages.0.steps=1e6tok")
    assert half.stages[0].steps == round(1e6 / 1024)
    total = plan_with().total_steps
    assert plan_with("stages.0.steps=0.25dur").stages[0].steps == round(0.25 * total)
    assert plan_with("optim.warmup_steps=4ba").optim.warmup_steps == 4


@pytest.mark.parametrize(
    ("override", "says"),
    [
        ("stages.0.steps=abc", "--set stages.0.steps=abc: stages.0.steps is a step count: a whole"),
        ("stages.0.steps=10tok", "--set stages.0.steps=10tok: less than one step"),
        ("stages.0.steps=2dur", "--set stages.0.steps=2dur: a share of the training is at most"),
    ],
)
def test_override_errors_name_the_key(override: str, says: str) -> None:
    with pytest.raises(PlanError) as err:
        plan_with(override)
    assert str(err.value).startswith(says), str(err.value)
    assert "\n" not in str(err.value)


def test_a_duration_on_a_key_that_is_no_step_count_is_left_to_the_type_check() -> None:
    with pytest.raises(PlanError, match="optim.lr"):
        plan_with("optim.lr=100ba")
