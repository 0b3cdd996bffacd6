"""`source = "middle"` (gradual middle stacking): trainable blocks in the middle.

The frozen blocks below them run under no_grad; the frozen blocks above them
run forward and pass the input gradient down, with no weight gradients.
"""

from __future__ import annotations

import pytest
import torch
from grow_fixtures import FAMILIES, snapshot, tiny_batch, tiny_model

from growcockpit.backend.loop.forward import StagedForward
from growcockpit.backend.loop.optim import build_optimizer
from growcockpit.families import spec_for
from growcockpit.grow import apply_freeze, get_layers, set_train_modes, stack_layers
from growcockpit.plan import ModelSpec, Plan, Stage, estimate_cost, step_cost
from growcockpit.plan.types import OptimSpec, trainable_layer_ids


def test_train_new_picks_the_inserted_middle_blocks() -> None:
    stage = Stage("m", 6, 10, enter="stack", source="middle", train="new")
    assert trainable_layer_ids(stage, 4) == [3, 4]
    assert trainable_layer_ids(Stage("t", 6, 10, enter="stack", train="new"), 4) == [4, 5]


@pytest.mark.filterwarnings("ignore:Full backward hook")
@pytest.mark.parametrize("family", FAMILIES)
def test_middle_blocks_train_through_frozen_blocks_above(family: str) -> None:
    model = tiny_model(family, layers=4)
    stage = Stage("m", 6, 10, enter="stack", source="middle", train="new")
    stack_layers(model, 2, "middle")
    trainable = trainable_layer_ids(stage, 4)
    result = apply_freeze(model, trainable, embeddings=False, head=True)
    forward = StagedForward.for_stage(result.trainable_layers, 6, False)
    assert forward.frozen_prefix == 3
    set_train_modes(model)
    layers = get_layers(model)
    calls = {i: 0 for i in range(6)}
    for i, layer in enumerate(layers):
        layer.register_full_backward_hook(lambda *_, i=i: calls.__setitem__(i, calls[i] + 1))
    before = snapshot(model)
    opt = build_optimizer(model, OptimSpec(), 1e-2)
    forward.loss(model, tiny_batch(family)).backward()
    # below: no backward at all; middle: weight gradients; above: input gradient only
    assert calls[0] == calls[1] == calls[2] == 0
    assert calls[4] == calls[5] == 1 and calls[3] == 1
    for i in (3, 4):
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in layers[i].parameters())
    for i in (0, 1, 2, 5):
        assert all(p.grad is None for p in layers[i].parameters())
    opt.step()
    after = model.state_dict()
    for i in (0, 1, 2, 5):
        prefix = f"{spec_for(family).layers_path}.{i}."
        assert all(torch.equal(after[k], v) for k, v in before.items() if k.startswith(prefix))


def test_cost_prices_frozen_blocks_above_with_input_gradient() -> None:
    # 6 layers, trainable [3, 4]: 3 frozen below (1 each), 2 trainable (1 + r), 1 above (1 + r/2)
    assert step_cost(6, 2, r=2.0, h=0.0, frozen_above=1) == 3 + 2 * 3 + 2
    assert step_cost(6, 2, r=2.0, h=0.0) == 4 + 2 * 3
    model = ModelSpec(
        family="gpt2", hidden_size=64, num_heads=2, intermediate_size=256, final_layers=6
    )
    stages = [
        Stage("s0", 4, 10, enter="init"),
        Stage("mid", 6, 10, enter="stack", source="middle", train="new"),
    ]
    mid = estimate_cost(Plan("p", model=model, stages=stages), h=0.0, refined=False).stages[1]
    top = estimate_cost(
        Plan("p", model=model, stages=[stages[0], Stage("top", 6, 10, enter="stack", train="new")]),
        h=0.0,
        refined=False,
    ).stages[1]
    assert mid.step_cost == 3 + 2 * 3 + 2 and top.step_cost == 4 + 2 * 3
