"""`layer_drop = p`: skip pattern f(seed, step), skipped blocks cost nothing, eval runs all."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
from grow_fixtures import FAMILIES, tiny_batch, tiny_model

from growcockpit.backend.loop.forward import StagedForward
from growcockpit.backend.loop.recipes import StageRecipes
from growcockpit.grow import get_layers, set_layers
from growcockpit.grow.layer_drop import skipped_blocks
from growcockpit.plan import ModelSpec, Plan, Stage, estimate_cost
from growcockpit.plan.cost import expected_depth_fraction
from growcockpit.plan.types import DistributedSpec


def test_pattern_is_a_pure_function_of_seed_and_step() -> None:
    patterns = [skipped_blocks(0, step, 8, 0.5) for step in range(400)]
    assert patterns == [skipped_blocks(0, step, 8, 0.5) for step in range(400)]
    assert patterns != [skipped_blocks(1, step, 8, 0.5) for step in range(400)]
    assert all(s <= set(range(1, 7)) for s in patterns)  # first and last always run
    mean = sum(len(s) for s in patterns) / len(patterns)
    assert 2.6 < mean < 3.4  # 6 middle blocks × 0.5
    assert skipped_blocks(0, 3, 8, 0.0) == frozenset()
    assert skipped_blocks(0, 3, 2, 0.9) == frozenset()
    state = torch.get_rng_state()
    skipped_blocks(0, 3, 8, 0.5)
    assert torch.equal(torch.get_rng_state(), state)  # torch's RNG untouched


@pytest.mark.parametrize("family", FAMILIES)
def test_skipped_blocks_are_the_identity_and_get_no_gradient(family: str) -> None:
    model = tiny_model(family, layers=4)
    model.eval()
    batch = tiny_batch(family)
    short = copy.deepcopy(model)
    set_layers(short, [get_layers(short)[i] for i in (0, 3)])
    forward = StagedForward(0, True, skip=frozenset({1, 2}))
    loss = forward.loss(model, batch)
    assert torch.equal(loss, StagedForward(0, True).loss(short, batch))
    loss.backward()
    layers = get_layers(model)
    assert all(p.grad is None for i in (1, 2) for p in layers[i].parameters())
    assert all(p.grad is not None for i in (0, 3) for p in layers[i].parameters())


def test_recipes_set_the_next_steps_pattern_and_clear_it() -> None:
    model = tiny_model("gpt2", layers=6)
    forward = StagedForward(0, True)
    stage = Stage("d", 6, 100, enter="init", layer_drop=0.5)
    recipes = StageRecipes()
    recipes.install(model, stage, [], forward, seed=7, step_in_stage=0, step=40)
    assert forward.skip == skipped_blocks(7, 40, 6, 0.5)
    recipes.after_step(1, 41)
    assert forward.skip == skipped_blocks(7, 41, 6, 0.5)
    recipes.clear()
    assert forward.skip == frozenset()


def test_cost_prices_the_expected_depth() -> None:
    assert expected_depth_fraction(8, 0.5) == 1 - 0.5 * 6 / 8
    assert expected_depth_fraction(2, 0.5) == 1.0
    model = ModelSpec(
        family="gpt2", hidden_size=64, num_heads=2, intermediate_size=256, final_layers=8
    )

    def step(p: float) -> float:
        plan = Plan("p", model=model, stages=[Stage("s", 8, 10, enter="init", layer_drop=p)])
        return estimate_cost(plan, h=0.0, refined=False).stages[0].step_cost

    assert step(0.5) == pytest.approx(step(0.0) * (1 - 0.5 * 6 / 8))


def test_layer_drop_refused_under_ddp(monkeypatch: pytest.MonkeyPatch) -> None:
    from growcockpit.backend.run import LaunchError, check_supported

    plan = Plan("p", stages=[Stage("s", 4, 10, enter="init", layer_drop=0.2)])
    check_supported(plan, "p.toml")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(LaunchError, match=r"stages\[0\]\.layer_drop"):
        check_supported(plan, "p.toml")
    # FSDP reduce-scatters only the blocks that ran, the same ones on every rank
    check_supported(dataclasses.replace(plan, distributed=DistributedSpec("fsdp")), "p.toml")
