"""Growth-recipe options of a stage: validation, save round trip, cost."""

from __future__ import annotations

import pytest

from growcockpit.plan import PlanError, dump_plan, loads_plan


def plan_text(family: str, grow: str, *, first: str = "", prev: int = 2, layers: int = 4) -> str:
    return f"""
name = "r"
[model]
family = "{family}"
hidden_size = 64
num_heads = 2
intermediate_size = 256
final_layers = {layers}
[[stages]]
name = "s0"
layers = {prev}
steps = 10
{first}
[[stages]]
name = "s1"
layers = {layers}
steps = 20
{grow}
"""


VALID = {
    "ramp on stack": ("gpt2", 'enter = "stack"\nramp_steps = 5'),
    "ramp on bert stack": ("bert", 'enter = "stack"\nramp_steps = 20'),
    "zero init on gpt2 stack": ("gpt2", 'enter = "stack"\ninit = "zero"'),
    "layer drop": ("gpt2", 'enter = "stack"\nlayer_drop = 0.3'),
    "middle stack, new": ("bert", 'enter = "stack"\nsource = "middle"\ntrain = "new"'),
}

INVALID = {
    "ramp zero": ("gpt2", 'enter = "stack"\nramp_steps = 0', "stages[1].ramp_steps", "≥ 1"),
    "ramp longer than stage": (
        "gpt2",
        'enter = "stack"\nramp_steps = 21',
        "stages[1].ramp_steps",
        "set ramp_steps ≤ 20",
    ),
    "zero init on bert": (
        "bert",
        'enter = "stack"\ninit = "zero"',
        "stages[1].init",
        "use ramp_steps",
    ),
    "zero init unknown": ("gpt2", 'enter = "stack"\ninit = "ones"', "stages[1].init", '"zero"'),
    "middle beyond depth": (
        "gpt2",
        'enter = "stack"\nsource = "middle"',
        "stages[1].layers",
        'source = "middle" copies existing layers',
    ),
    "layer drop one": (
        "gpt2",
        'enter = "stack"\nlayer_drop = 1.0',
        "stages[1].layer_drop",
        "[0, 1)",
    ),
    "layer drop too shallow": (
        "gpt2",
        "layer_drop = 0.2",
        "stages[1].layer_drop",
        "only 2 layers",
    ),
    "ramp on continue": ("gpt2", "ramp_steps = 3", "stages[1].ramp_steps", "adds none"),
}


@pytest.mark.parametrize("case", VALID)
def test_valid_recipes_round_trip(case: str) -> None:
    family, grow = VALID[case]
    plan = loads_plan(plan_text(family, grow))
    assert loads_plan(dump_plan(plan)) == plan


@pytest.mark.parametrize("case", INVALID)
def test_invalid_recipes_name_key_and_fix(case: str) -> None:
    family, grow, key, phrase = INVALID[case]
    layers = {"ramp on continue": 2, "layer drop too shallow": 2, "middle beyond depth": 5}.get(
        case, 4
    )
    text = plan_text(family, grow, layers=layers)
    with pytest.raises(PlanError) as err:
        loads_plan(text, source="p.toml")
    assert err.value.key == key
    assert phrase in str(err.value)
    assert "\n" not in str(err.value)


def test_ramp_on_interpolate_and_width_only_decoalesce_refused() -> None:
    base = """
name = "v"
[model]
family = "gpt2"
hidden_size = 64
num_heads = 2
intermediate_size = 256
final_layers = 4
[[stages]]
name = "full"
layers = 4
steps = 10
[[stages]]
name = "small"
layers = {small}
enter = "coalesce"
steps = 10
[[stages]]
name = "back"
layers = 4
enter = "{op}"
steps = 10
ramp_steps = 5
"""
    with pytest.raises(PlanError, match="no gate can keep the function"):
        loads_plan(base.format(small=2, op="interpolate"))
    with pytest.raises(PlanError, match="only widens"):
        loads_plan(base.format(small=4, op="decoalesce"))
    loads_plan(base.format(small=2, op="decoalesce"))
