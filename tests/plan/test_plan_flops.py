"""FLOPs counted once (growcockpit/plan/flops.py): the cost model's units × 2 FLOPs per
block weight per token, for the cockpit, compare, the race and the benchmarks alike."""

from __future__ import annotations

import pytest

from growcockpit.plan import plan_from_dict
from growcockpit.plan.cost import estimate_cost
from growcockpit.plan.flops import (
    flops_through_step,
    full_step_flops,
    head_in_blocks,
    plan_flops,
    speedup_to,
    stage_step_flops,
)

D, SEQ, BATCH, VOCAB, L = 128, 128, 16, 4000, 8
PLAN = {
    "name": "p",
    "model": {"family": "gpt2", "hidden_size": D, "num_heads": 4, "intermediate_size": 4 * D,
              "max_seq_len": SEQ, "final_layers": L},
    "data": {"tokenizer": f"train:{VOCAB}", "seq_len": SEQ},
    "optim": {"batch_size": BATCH},
    "stages": [
        {"name": "one", "layers": 1, "enter": "init", "train": "all", "steps": 10},
        {"name": "grow", "layers": 8, "enter": "stack", "train": "top:2", "steps": 10},
        {"name": "all", "layers": 8, "train": "all", "steps": 10},
    ],
}  # fmt: skip


def test_step_flops_follow_6n_2n() -> None:
    plan = plan_from_dict(PLAN)
    tokens = SEQ * BATCH
    block = 2 * 12 * D * D * tokens  # one block's forward: 2 FLOPs per weight per token
    head = 2 * D * VOCAB * tokens  # the tied decoder's forward
    flops = stage_step_flops(plan)
    assert full_step_flops(plan) == pytest.approx(3 * (L * block + head))
    assert flops[2] == pytest.approx(3 * (L * block + head))  # everything trains
    assert flops[0] == pytest.approx(3 * (block + head))  # the 1-layer model, all trained
    # depth 8, top 2, embeddings frozen: 6 forward-only blocks, 2 trained (the lowest without
    # an input gradient), the tied head's forward and input gradient
    assert flops[1] == pytest.approx(6 * block + 5 * block + 2 * head)
    assert stage_step_flops(plan, head=False)[0] == pytest.approx(3 * block)
    # the 1-layer step's share of a full one: (1 + h) / (L + h), h = V / (12 d)
    h = VOCAB / (12 * D)
    assert flops[0] / full_step_flops(plan) == pytest.approx((1 + h) / (L + h))


def test_a_plans_flops_are_its_stages_steps() -> None:
    plan = plan_from_dict(PLAN)
    per = stage_step_flops(plan)
    assert plan_flops(plan) == pytest.approx(
        sum(f * s.steps for f, s in zip(per, plan.stages, strict=True))
    )
    unit = full_step_flops(plan) / estimate_cost(plan).baseline_step_cost
    assert plan_flops(plan) == pytest.approx(estimate_cost(plan).total * unit)


def test_flops_through_a_step_walk_the_stages_and_interpolate() -> None:
    plan = plan_from_dict(PLAN)
    per_step = stage_step_flops(plan)
    first = plan.stages[0].steps
    assert flops_through_step(plan, 0) == 0.0
    assert flops_through_step(plan, first) == pytest.approx(first * per_step[0])
    into_second = flops_through_step(plan, first + 1.5)
    assert into_second == pytest.approx(first * per_step[0] + 1.5 * per_step[1])
    assert flops_through_step(plan, 10**9) == pytest.approx(
        sum(s.steps * f for s, f in zip(plan.stages, per_step, strict=True))
    )
    assert flops_through_step(plan, first, head=False) < flops_through_step(plan, first)


def test_speedup_to_a_point_counts_with_and_without_the_head() -> None:
    """The bench's and compare's "N× fewer FLOPs to the baseline's loss", in both counts:
    a baseline against itself is 1×; a plan that got there in its shallow first stage saves
    more in blocks alone than with the head every step still pays."""
    plan = plan_from_dict(PLAN)
    base = plan_from_dict({**PLAN, "stages": [{"name": "full", "layers": L, "steps": 30}]})
    same = speedup_to(base, 25, base, 25)
    assert same.all == pytest.approx(1.0) and same.blocks == pytest.approx(1.0)
    early = speedup_to(base, 25, plan, 5)
    assert early.all == pytest.approx(flops_through_step(base, 25) / flops_through_step(plan, 5))
    assert early.blocks > early.all > 1.0


def test_the_head_in_blocks_bounds_what_depth_can_save() -> None:
    plan = plan_from_dict(PLAN)
    h = head_in_blocks(plan)
    head = 2 * D * VOCAB  # the tied decoder against one block's 2 * 12 * D * D, per token
    assert h == pytest.approx(head / (2 * 12 * D * D))
    one_layer = stage_step_flops(plan)[0] / full_step_flops(plan)
    assert one_layer == pytest.approx((1 + h) / (L + h))
