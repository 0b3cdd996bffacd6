"""`section.field=value` overrides: parsing (properties), application, errors naming the key."""

from __future__ import annotations

import dataclasses
import math
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from growcockpit.plan import PlanError, load_plan
from growcockpit.plan.overrides import (
    apply_overrides,
    load_plan_with,
    parse_override,
    parse_value,
)
from growcockpit.plan.types import OptimSpec, Stage

TINY = Path(__file__).resolve().parents[1] / "plans" / "tiny.toml"
OPTIM_FIELDS = [f.name for f in dataclasses.fields(OptimSpec)]
STAGE_FIELDS = [f.name for f in dataclasses.fields(Stage)]

toml_scalars = st.one_of(
    st.integers(min_value=-(2**62), max_value=2**62),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=20),
)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


@given(st.sampled_from(OPTIM_FIELDS), toml_scalars)
def test_section_key_and_toml_value_round_trip(field: str, value: Any) -> None:
    ov = parse_override(f"optim.{field}={_toml(value)}")
    assert ov.path == ("optim", field)
    assert ov.value == value and type(ov.value) is type(value)


@given(st.integers(min_value=0, max_value=999), st.sampled_from(STAGE_FIELDS), st.integers())
def test_stage_key_paths(index: int, field: str, value: int) -> None:
    ov = parse_override(f"stages.{index}.{field}={value}")
    assert ov.path == ("stages", index, field) and ov.value == value


@given(st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True))
def test_bare_words_are_strings(word: str) -> None:
    value = parse_value(word)
    if word in ("true", "false", "inf", "nan"):
        assert not isinstance(value, str)
    else:
        assert value == word


@given(st.from_regex(r"[a-z]{1,10}", fullmatch=True).filter(lambda k: k not in OPTIM_FIELDS))
def test_unknown_keys_are_named(key: str) -> None:
    with pytest.raises(PlanError) as info:
        parse_override(f"optim.{key}=1")
    assert f'unknown key "{key}"' in str(info.value)
    assert str(info.value).startswith(f"--set optim.{key}=1: ")


@given(
    st.dictionaries(st.sampled_from(OPTIM_FIELDS), st.integers(), max_size=4),
    st.sampled_from(OPTIM_FIELDS),
    st.integers(),
)
def test_apply_sets_one_key_and_keeps_the_rest(
    optim: dict[str, int], field: str, value: int
) -> None:
    data = {"name": "p", "optim": dict(optim), "stages": [{"name": "a"}]}
    out = apply_overrides(data, [parse_override(f"optim.{field}={value}")])
    assert out["optim"] == {**optim, field: value}
    assert data["optim"] == optim  # the input is not changed
    assert out["stages"] == data["stages"]


def test_typo_suggests_the_key() -> None:
    with pytest.raises(PlanError) as info:
        parse_override("optim.lrr=1")
    assert str(info.value).startswith('--set optim.lrr=1: unknown key "lrr"; did you mean "lr"?')


@pytest.mark.parametrize(
    ("item", "needle"),
    [
        ("optim", "expected KEY=VALUE"),
        ("=3", "expected KEY=VALUE"),
        ("optim=3", "expected optim.FIELD=VALUE"),
        ("name.x=3", "plain value"),
        ("stages.x.steps=3", "stages.N.FIELD=VALUE"),
        ("stagez.0.steps=3", 'did you mean "stages"?'),
        ("stages.0.stepz=3", 'did you mean "steps"?'),
    ],
)
def test_malformed_keys(item: str, needle: str) -> None:
    with pytest.raises(PlanError) as info:
        parse_override(item)
    assert needle in str(info.value)


def test_load_plan_with_overrides_validates_like_a_plan_file() -> None:
    plan, text = load_plan_with(
        TINY, ["optim.lr=2e-3", "stages.1.steps=7", "optim.schedule=cosine"]
    )
    assert math.isclose(plan.optim.lr, 2e-3) and plan.stages[1].steps == 7
    assert plan.optim.schedule == "cosine"
    frozen = tomllib.loads(text)  # the text a run directory freezes reads back as the plan
    assert frozen["optim"]["lr"] == 2e-3 and frozen["stages"][1]["steps"] == 7
    assert "# Integration-test plan" in text  # comments kept
    with pytest.raises(PlanError) as info:
        load_plan_with(TINY, ["stages.1.steps=0"])
    assert str(info.value).startswith("--set stages.1.steps=0: stages[1].steps: must be ≥ 1")
    with pytest.raises(PlanError, match="the plan has 2 stages"):
        load_plan_with(TINY, ["stages.2.steps=3"])


def test_no_overrides_is_load_plan() -> None:
    plan, text = load_plan_with(TINY, [])
    assert plan == load_plan(TINY) and text == TINY.read_text()
