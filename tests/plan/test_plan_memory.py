"""The per-rank memory estimate and traffic model (plan/memory.py, plan/comm.py)."""

from __future__ import annotations

import pytest

from growcockpit.plan import load_plan, loads_plan
from growcockpit.plan.comm import plan_traffic
from growcockpit.plan.footprint import stage_footprints
from growcockpit.plan.memory import GB, memory_fit, plan_memory
from growcockpit.plan.memory_show import memory_lines, memory_verdict
from growcockpit.resources import sample_plans_dir

SEVEN_B = sample_plans_dir() / "llama-7b-fsdp-late.toml"

MSLT = """
name = "m"
[model]
family = "gpt2"
hidden_size = 64
num_heads = 2
intermediate_size = 256
final_layers = 4
[data]
tokenizer = "train:1000"
seq_len = 32
[optim]
batch_size = 4
[[stages]]
name = "one"
layers = 1
enter = "init"
steps = 10
[[stages]]
name = "two-new"
layers = 4
enter = "stack"
train = "new"
steps = 10
[[stages]]
name = "all"
layers = 4
train = "all"
steps = 10
"""


def test_seven_b_has_llama_2_7b_parameter_count() -> None:
    final = stage_footprints(load_plan(SEVEN_B))[-1]
    assert final.params == 6_738_415_616  # Llama-2-7B's published count


def test_seven_b_fits_80_gb_under_fsdp_on_8_ranks_but_not_ddp() -> None:
    plan = load_plan(SEVEN_B)
    fsdp = memory_fit(plan_memory(plan, 8), 80.0)
    ddp = memory_fit(plan_memory(plan, 8, "ddp"), 80.0)
    assert fsdp is not None and ddp is not None
    assert fsdp.fits and not ddp.fits
    assert "fits one 80 GB GPU (FSDP, 8 ranks)" in memory_verdict(plan, 8, 80.0)
    # AdamW state alone, 16 bytes a parameter, is more than one GPU holds unsharded
    assert ddp.largest.state > 80 * GB


def test_fsdp_shards_state_not_activations() -> None:
    plan = loads_plan(MSLT)
    one, four = plan_memory(plan, 1, "fsdp"), plan_memory(plan, 4, "fsdp")
    for a, b in zip(one, four, strict=True):
        assert b.params == pytest.approx(a.params / 4)
        assert b.grads == pytest.approx(a.grads / 4)
        assert b.optimizer == pytest.approx(a.optimizer / 4)
        assert b.activations == a.activations


def test_frozen_blocks_hold_no_gradient_optimizer_or_activations() -> None:
    plan = loads_plan(MSLT)
    fps = stage_footprints(plan)
    new, full = fps[1], fps[2]
    assert new.trainable_blocks == 3 and new.autograd_blocks == 3  # block 0 frozen, under no_grad
    assert not new.embeddings_trainable
    assert new.trainable == 3 * new.parts.block + new.parts.head
    mem = plan_memory(plan, 2, "ddp")
    assert mem[1].grads == new.trainable * 4 and mem[2].grads == full.trainable * 4
    assert mem[1].optimizer == 2 * mem[1].grads
    assert mem[1].activations < mem[2].activations


def test_ddp_gradient_traffic_falls_by_the_frozen_fraction() -> None:
    plan = loads_plan(MSLT)
    fps = stage_footprints(plan)
    ddp = plan_traffic(plan, 2, "ddp")
    for fp, t in zip(fps, ddp, strict=True):
        assert t.all_reduce == fp.trainable * 4
        assert t.sent == pytest.approx(2 * 0.5 * fp.trainable * 4)
    assert ddp[1].sent / ddp[2].sent == pytest.approx(fps[1].trainable / fps[2].trainable)


def test_fsdp_traffic_gathers_frozen_blocks_but_reduces_only_trainable_ones() -> None:
    plan = loads_plan(MSLT)
    plan.optim.precision = "fp32"
    plan.optim.grad_accum_steps = 3
    fps = stage_footprints(plan)
    fsdp = plan_traffic(plan, 2, "fsdp")
    new = fps[1]
    # every block forward, 3 backward, block 0 prefetched for a backward it never takes
    assert fsdp[1].all_gather == 3 * 4 * ((4 + 3 + 1) * new.parts.block + new.root)
    assert fsdp[1].reduce_scatter == 3 * 4 * new.trainable
    assert fsdp[1].all_reduce == 0


def test_cpu_offload_moves_state_off_the_device() -> None:
    plan = load_plan(SEVEN_B)
    plan.distributed.cpu_offload = True
    mem = plan_memory(plan, 8)
    assert all(s.params == 0 and s.offloaded > 0 for s in mem)
    assert any("cpu_offload" in line for line in memory_lines(plan, 8, 80.0))


def test_memory_lines_show_every_stage_and_both_strategies() -> None:
    lines = memory_lines(loads_plan(MSLT), 2, 0.0001)
    text = "\n".join(lines)
    for name in ("one", "two-new", "all"):
        assert f"  {name} " in text
    assert "does NOT fit one 0.0001 GB GPU (DDP, 2 ranks)" in text
    assert "for comparison:" in text and "(FSDP, 2 ranks)" in text
