"""`[distributed]`: strategy and cpu_offload load, save and validate (one line per bad pairing)."""

from __future__ import annotations

import pytest

from growcockpit.plan import PlanError, dump_plan, load_plan, loads_plan
from growcockpit.plan.overrides import load_plan_with
from growcockpit.plan.show import format_plan
from growcockpit.resources import sample_plans_dir

NO_CHECKPOINTS = "every_steps = 0\nevery_minutes = 0\nstage_start = false"


def plan_text(
    distributed: str, optim: str = "", grow: str = "", checkpoint: str = NO_CHECKPOINTS
) -> str:
    return f"""
name = "d"
[model]
family = "gpt2"
hidden_size = 64
num_heads = 2
intermediate_size = 256
final_layers = 4
[optim]
{optim}
[checkpoint]
{checkpoint}
[distributed]
{distributed}
[[stages]]
name = "s0"
layers = 2
steps = 10
[[stages]]
name = "s1"
layers = 4
steps = 20
enter = "stack"
{grow}
"""


def test_default_is_ddp() -> None:
    plan = loads_plan(plan_text(""))
    assert plan.distributed.strategy == "ddp" and not plan.distributed.cpu_offload


def test_fsdp_round_trips() -> None:
    plan = loads_plan(plan_text('strategy = "fsdp"\ncpu_offload = true', 'precision = "bf16"'))
    assert plan.distributed.strategy == "fsdp" and plan.distributed.cpu_offload
    again = loads_plan(dump_plan(plan))
    assert again.distributed == plan.distributed


BAD = {
    "unknown strategy": ('strategy = "zero3"', "", "", "distributed.strategy"),
    "offload without fsdp": ("cpu_offload = true", "", "", "distributed.cpu_offload"),
    "fsdp fp16": ('strategy = "fsdp"', 'precision = "fp16"', "", "optim.precision"),
    "fsdp compile": ('strategy = "fsdp"', "compile = true", "", "optim.compile"),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_combinations_name_the_key_and_fix(case: str) -> None:
    distributed, optim, grow, key = BAD[case]
    with pytest.raises(PlanError) as err:
        loads_plan(plan_text(distributed, optim, grow))
    assert err.value.key == key
    message = str(err.value)
    assert "\n" not in message and ("use" in message or "set" in message or "remove" in message)


def test_the_same_options_pass_under_ddp() -> None:
    loads_plan(plan_text("", "compile = false", "ramp_steps = 5\nlayer_drop = 0.2"))


def test_fsdp_takes_every_growth_recipe() -> None:
    """Ramps, layer drop, every stack variant and carried moments run under FSDP
    (tests/backend/test_fsdp_operators.py, test_fsdp_plans.py)."""
    grow = 'source = "middle"\ninit = "copy"\nramp_steps = 5\nlayer_drop = 0.2'
    loads_plan(plan_text('strategy = "fsdp"', "optimizer_reset = false", grow))


def test_fsdp_takes_the_checkpoint_cadence() -> None:
    plan = loads_plan(plan_text('strategy = "fsdp"', checkpoint="every_steps = 10"))
    assert plan.checkpoint.every_steps == 10 and plan.checkpoint.stage_start


def test_the_7b_fsdp_sample_plan_validates_and_prices() -> None:
    plan = load_plan(sample_plans_dir() / "llama-7b-fsdp-late.toml")
    assert plan.distributed.strategy == "fsdp" and plan.model.final_layers == 32
    shown = format_plan(plan)
    assert "distributed: fsdp" in shown
    assert "estimated compute:" in shown and "speedup" in shown


@pytest.mark.parametrize(
    "name", sorted(p.name for p in sample_plans_dir().glob("*.toml")), ids=lambda n: n[:-5]
)
def test_every_shipped_recipe_is_accepted_under_fsdp(name: str) -> None:
    """Every operator, freeze policy, ramp, layer drop and moment carry of the shipped recipes
    has a sharded path now, so `strategy = "fsdp"` refuses none of them (fp16 and compile,
    still refused, appear in no sample plan)."""
    plan, _ = load_plan_with(sample_plans_dir() / name, ["distributed.strategy=fsdp"])
    assert plan.distributed.strategy == "fsdp"
