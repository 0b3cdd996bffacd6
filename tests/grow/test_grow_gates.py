"""Gated (masked) growth, `ramp_steps`: identity at m = 0, gone at m = 1."""

from __future__ import annotations

import copy

import pytest
import torch
from grow_fixtures import FAMILIES, logits, tiny_batch, tiny_model

from growcockpit.backend.loop.forward import StagedForward
from growcockpit.families import spec_of
from growcockpit.grow import decoalesce_model, get_layers, stack_layers
from growcockpit.grow.gates import BlockGates, ramp_value


def _loss(model: torch.nn.Module, family: str) -> torch.Tensor:
    model.eval()
    with torch.no_grad():
        return StagedForward(0, True).loss(model, tiny_batch(family))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("source", ["top", "bottom"])
def test_gated_copies_keep_the_function_bitwise(family: str, source: str) -> None:
    model = tiny_model(family, layers=2)
    ids = tiny_batch(family).input_ids
    before_loss, before_logits = _loss(model, family), logits(model, ids)
    result = stack_layers(model, 2, source)
    gates = BlockGates(get_layers(model), result.new_layer_ids)
    assert torch.equal(_loss(model, family), before_loss)
    # Hugging Face's own forward calls the blocks with keyword arguments: the hook copes.
    assert torch.equal(logits(model, ids), before_logits)
    gates.remove()
    assert not torch.equal(_loss(model, family), before_loss)  # copies alone change it


@pytest.mark.parametrize("family", FAMILIES)
def test_gated_decoalesce_depth_keeps_the_function(family: str) -> None:
    small = tiny_model(family, layers=2, hidden=16, heads=2, ffn=32)
    before = _loss(small, family)
    large, result = decoalesce_model(small, width=True, depth=True)
    assert result.new_layer_ids == [1, 3]
    BlockGates(get_layers(large), result.new_layer_ids)
    assert abs(float(_loss(large, family)) - float(before)) <= 1e-5


@pytest.mark.parametrize("family", FAMILIES)
def test_gate_mixes_then_disappears(family: str) -> None:
    model = tiny_model(family, layers=2)
    stack_layers(model, 1, "top")
    plain = copy.deepcopy(model)
    gates = BlockGates(get_layers(model), [2], value=0.5)
    layer = get_layers(model)[2]
    assert len(layer._forward_hooks) == 1
    x = torch.randn(2, 5, 32)
    model.eval(), plain.eval()
    run = spec_of(model).block_call(model, x)  # Llama blocks take their rotary embeddings
    with torch.no_grad():
        inner = run(get_layers(plain)[2], x)
        assert torch.allclose(run(layer, x), x + 0.5 * (inner - x))
    gates.set(1.0)
    assert not gates.active and len(layer._forward_hooks) == 0
    assert torch.equal(_loss(model, family), _loss(plain, family))


def test_gradient_reaches_gated_block_scaled_by_m() -> None:
    grads = []
    for m in (0.0, 0.25, 0.5):
        model = tiny_model("gpt2", layers=2)
        stack_layers(model, 1, "top")
        BlockGates(get_layers(model), [2], value=m)
        model.eval()
        StagedForward(0, True).loss(model, tiny_batch("gpt2")).backward()
        grads.append(get_layers(model)[2].mlp.c_fc.weight.grad.norm().item())
    assert grads[0] == 0.0 and 0 < grads[1] < grads[2]


def test_ramp_value() -> None:
    assert [ramp_value(t, 4) for t in range(6)] == [0.0, 0.25, 0.5, 0.75, 1.0, 1.0]
    with pytest.raises(ValueError):
        ramp_value(0, 0)


def test_stage_recipes_ramp_then_remove_and_rebuild_on_resume() -> None:
    from growcockpit.backend.loop.recipes import StageRecipes
    from growcockpit.plan.types import Stage

    stage = Stage(name="g", layers=3, steps=10, enter="stack", ramp_steps=3)
    model = tiny_model("gpt2", layers=2)
    stack_layers(model, 1, "top")
    layer = get_layers(model)[2]
    recipes = StageRecipes()
    fwd = StagedForward(0, True)
    recipes.install(model, stage, [2], fwd, seed=0, step_in_stage=0, step=5)
    assert recipes.gates is not None and recipes.gates.value == 0.0
    values = []
    for t in range(1, 4):
        recipes.after_step(t, 5 + t)
        values.append(recipes.gates.value if recipes.gates else None)
    assert values == [1 / 3, 2 / 3, None] and len(layer._forward_hooks) == 0
    recipes.install(
        model, stage, [2], fwd, seed=0, step_in_stage=2, step=7
    )  # resume inside the ramp
    assert recipes.gates is not None and recipes.gates.value == 2 / 3
    recipes.install(model, stage, [2], fwd, seed=0, step_in_stage=3, step=8)  # resume after it
    assert recipes.gates is None and len(layer._forward_hooks) == 0


def test_unfinished_ramp_note_names_the_gate() -> None:
    from growcockpit.backend.loop.recipes import StageRecipes
    from growcockpit.plan.types import Stage

    model = tiny_model("gpt2", layers=2)
    stack_layers(model, 1, "top")
    recipes = StageRecipes()
    recipes.install(
        model,
        Stage(name="g", layers=3, steps=10, enter="stack", ramp_steps=4),
        [2],
        StagedForward(0, True),
        seed=0,
        step_in_stage=1,
        step=1,
    )
    assert "m = 0.25 on blocks [2]" in recipes.unfinished_ramp_note()
