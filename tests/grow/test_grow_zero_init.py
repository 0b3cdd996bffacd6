"""`init = "zero"` on stack: GPT-2 identity at growth without a gate; BERT refused."""

from __future__ import annotations

import pytest
import torch
from grow_fixtures import logits, snapshot, tiny_batch, tiny_model

from growcockpit.backend.loop.forward import StagedForward
from growcockpit.backend.loop.optim import build_optimizer
from growcockpit.grow import apply_freeze, carry_optimizer_state, get_layers, stack_layers
from growcockpit.plan.types import OptimSpec


@pytest.mark.parametrize("source", ["top", "bottom", "random"])
def test_zero_init_gpt2_keeps_the_function_bitwise(source: str) -> None:
    model = tiny_model("gpt2", layers=2)
    ids = tiny_batch("gpt2").input_ids
    model.eval()
    before = logits(model, ids)
    old = [snapshot(layer) for layer in get_layers(model)]
    stack_layers(model, 2, source, init="zero")
    assert torch.equal(logits(model, ids), before)
    layers = get_layers(model)
    for i in (2, 3):
        for proj in (layers[i].attn.c_proj, layers[i].mlp.c_proj):
            assert not proj.weight.any() and not proj.bias.any()
        if source != "random":  # everything else is still a bitwise copy
            src = old[i - 2]  # 2 → 4: top and bottom both copy blocks 0, 1
            for name, value in layers[i].state_dict().items():
                if "c_proj" not in name:
                    assert torch.equal(value, src[name]), name


def test_zero_init_projections_get_gradients() -> None:
    model = tiny_model("gpt2", layers=2)
    stack_layers(model, 1, "top", init="zero")
    model.train()
    StagedForward(0, True).loss(model, tiny_batch("gpt2")).backward()
    new = get_layers(model)[2]
    assert new.attn.c_proj.weight.grad.abs().sum() > 0
    assert new.mlp.c_proj.weight.grad.abs().sum() > 0


def test_zero_init_refused_for_bert() -> None:
    model = tiny_model("bert", layers=2)
    with pytest.raises(ValueError, match="use ramp_steps"):
        stack_layers(model, 1, "top", init="zero")
    assert len(get_layers(model)) == 2


def test_gated_or_zeroed_copies_start_with_fresh_moments() -> None:
    model = tiny_model("gpt2", layers=2)
    apply_freeze(model, [0, 1], True, True)
    old = build_optimizer(model, OptimSpec(), 1e-3)
    StagedForward(0, True).loss(model, tiny_batch("gpt2")).backward()
    old.step()
    result = stack_layers(model, 2, "top", init="zero")
    apply_freeze(model, [0, 1, 2, 3], True, True)
    new = build_optimizer(model, OptimSpec(), 1e-3)
    counts = carry_optimizer_state(old, new, model, result, fresh_layers=[2, 3])
    layers = get_layers(model)
    assert counts["copied"] == 0
    assert counts["fresh"] == sum(1 for i in (2, 3) for _ in layers[i].parameters())
    assert all(p not in new.state for i in (2, 3) for p in layers[i].parameters())
    assert all(p in new.state for p in layers[0].parameters())
