"""`[distributed]`: strategy and cpu_offload load, save and validate (one line per bad pairing)."""

from __future__ import annotations

import pytest

from growcockpit.plan import PlanError, dump_plan, loads_plan

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
    "fsdp ramp": ('strategy = "fsdp"', "", "ramp_steps = 5", "stages[1].ramp_steps"),
    "fsdp layer drop": ('strategy = "fsdp"', "", "layer_drop = 0.2", "stages[1].layer_drop"),
    "fsdp carry": ('strategy = "fsdp"', "optimizer_reset = false", "", "optim.optimizer_reset"),
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


def test_fsdp_refuses_a_checkpoint_cadence_until_it_can_write_one() -> None:
    with pytest.raises(PlanError) as err:
        loads_plan(plan_text('strategy = "fsdp"', checkpoint=""))
    assert err.value.key == "checkpoint.every_minutes" and "every_minutes = 0" in str(err.value)
    loads_plan(plan_text("", checkpoint=""))  # DDP checkpoints as ever
