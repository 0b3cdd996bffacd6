"""The validation gaps fuzzing found: no ceilings, huge echoes, silly suggestions, the wrong culprit."""

from __future__ import annotations

import tomllib

import pytest
from repo_paths import REPO

from growcockpit.plan import Plan, PlanError, loads_plan, plan_from_dict, plan_problems

ROOT = REPO
TINY = (ROOT / "tests" / "plans" / "tiny.toml").read_text()


def _error(text: str) -> str:
    with pytest.raises(PlanError) as err:
        loads_plan(text, source="p.toml")
    return str(err.value)


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("max_seq_len = 64", "max_seq_len = 9223372036854775807", "model.max_seq_len"),
        ("batch_size = 8", "batch_size = 1000000000000000000", "optim.batch_size"),
        ("hidden_size = 32", "hidden_size = 1048576", "model.hidden_size"),
        ("final_layers = 4", "final_layers = 100000", "model.final_layers"),
        ("keep = 10", "keep = 9223372036854775807", "checkpoint.keep"),
    ],
)
def test_sizes_have_ceilings(old: str, new: str, key: str) -> None:
    text = _error(TINY.replace(old, new, 1))
    assert f": {key}: must be ≤ " in text and "set a smaller value" in text


def test_stage_sizes_have_ceilings() -> None:
    text = TINY.replace("layers = 4\nenter", "layers = 5000\nenter").replace(
        "final_layers = 4", "final_layers = 1024"
    )
    assert "stages[1].layers: must be ≤ 1,024" in _error(text)
    huge = TINY.replace("layers = 4\nenter", "layers = 9223372036854775807\nenter")
    assert "stages[1].layers: must be ≤ 1,024" in _error(huge)  # once a MemoryError
    for low in ("-9223372036854775808", str(-(2**70))):  # once an OverflowError in range()
        negative = TINY.replace("layers = 2\n", f"layers = {low}\n", 1)
        assert "stages[0].layers: must be between 0 and 1,024, got -" in _error(negative)
    steps = TINY.replace("steps = 20\n\n[[stages]]", "steps = 10000000000000\n\n[[stages]]")
    assert "stages[0].steps: must be ≤ " in _error(steps)


def test_realistic_sizes_still_pass() -> None:
    big = (ROOT / "sample_plans" / "mslt-bert-base.toml").read_text()
    loads_plan(big, source="mslt-bert-base.toml")


@pytest.mark.parametrize(
    "value",
    [
        '"' + "x" * 100_000 + '"',
        "[" + ", ".join(["1"] * 20_000) + "]",
        '"' + "\\u001b[31m" * 1000 + '"',
    ],
)
def test_long_values_are_cut_in_the_error(value: str) -> None:
    text = _error(TINY.replace("hidden_size = 32", f"hidden_size = {value}", 1))
    assert text.startswith("p.toml:7: model.hidden_size: expected an integer")
    assert len(text) < 300 and "characters)" in text and "\x1b" not in text


def test_long_unknown_key_and_value_are_cut() -> None:
    text = _error(TINY.replace("[model]", '[model]\n"' + "k" * 50_000 + '" = 1', 1))
    assert "unknown key" in text and len(text) < 1500
    text = _error(TINY.replace('family = "bert"', 'family = "' + "b" * 50_000 + '"', 1))
    assert "unknown value" in text and len(text) < 1500


def test_huge_float_gets_no_309_digit_suggestion() -> None:
    text = _error(TINY.replace("steps = 20\n\n[[stages]]", "steps = -1e308\n\n[[stages]]", 1))
    assert "expected an integer" in text and "write a whole number" in text
    assert len(text) < 200
    small = _error(TINY.replace("steps = 20\n\n[[stages]]", "steps = 20.0\n\n[[stages]]", 1))
    assert "write 20" in small


def test_stack_to_fewer_layers_names_the_layer_count() -> None:
    text = TINY.replace('layers = 4\nenter = "stack"', 'layers = 1\nenter = "stack"')
    first = _error(text)
    assert "stages[1].layers" in first and '"stack" must add layers' in first
    assert not any(".train" in str(p) for p in plan_problems(_plan_unchecked(text)))


def _plan_unchecked(text: str) -> Plan:
    return plan_from_dict(tomllib.loads(text), validate=False)


def test_stage_name_with_terminal_controls_is_refused() -> None:
    text = _error(TINY.replace('name = "grow"', 'name = "grow\\u001b[2J"', 1))
    assert "stages[1].name" in text and "U+001B" in text and "\x1b" not in text
