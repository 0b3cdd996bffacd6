"""MSLT freeze policy oracles, set up exactly as the engine does it."""

from __future__ import annotations

import pytest
import torch
from grow_fixtures import FAMILIES, snapshot, tiny_batch, tiny_model
from torch import nn

from growcockpit.backend.loop.forward import StagedForward
from growcockpit.backend.loop.optim import build_optimizer
from growcockpit.grow import (
    apply_freeze,
    carry_optimizer_state,
    coalesce_model,
    get_layers,
    stack_layers,
)
from growcockpit.grow.model_parts import head_parameters
from growcockpit.plan.types import OptimSpec, Stage, trainable_layer_ids


def _enter(
    model: nn.Module, stage: Stage, prev: int
) -> tuple[StagedForward, torch.optim.Optimizer]:
    trainable = trainable_layer_ids(stage, prev)
    result = apply_freeze(model, trainable, stage.embeddings_trainable(), stage.head_trainable())
    forward = StagedForward.for_stage(
        result.trainable_layers, len(get_layers(model)), result.embeddings_trainable
    )
    return forward, build_optimizer(model, OptimSpec(weight_decay=0.01), 1e-2)


def _grown(family: str) -> tuple[nn.Module, StagedForward, torch.optim.Optimizer]:
    model = tiny_model(family, layers=2)
    stack_layers(model, 2, "top")
    forward, opt = _enter(
        model, Stage(name="grow", layers=4, steps=1, enter="stack", train="new"), 2
    )
    return model, forward, opt


@pytest.mark.parametrize("family", FAMILIES)
def test_only_new_blocks_and_head_train(family: str) -> None:
    model, forward, opt = _grown(family)
    layers = get_layers(model)
    head = {id(p) for p in head_parameters(model)}
    expected = {id(p) for i in (2, 3) for p in layers[i].parameters()} | head
    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    assert trainable == expected
    assert not model.get_input_embeddings().weight.requires_grad  # tied decoder frozen too
    assert forward.frozen_prefix == 2 and not forward.embeddings_trainable
    in_opt = {id(p) for g in opt.param_groups for p in g["params"]}
    assert in_opt == trainable  # the prts bug: the optimizer must hold exactly this set


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
@pytest.mark.parametrize("family", FAMILIES)
def test_frozen_blocks_get_no_backward(family: str) -> None:
    model, forward, opt = _grown(family)
    layers = get_layers(model)
    calls = {i: 0 for i in range(4)}

    def hook(i: int):  # type: ignore[no-untyped-def]
        def fire(*_: object) -> None:
            calls[i] += 1

        return fire

    handles = [layers[i].register_full_backward_hook(hook(i)) for i in range(4)]
    loss = forward.loss(model, tiny_batch(family))
    loss.backward()
    for h in handles:
        h.remove()
    assert calls[0] == calls[1] == 0
    assert calls[3] >= 1
    for name, p in model.named_parameters():
        if p.requires_grad:
            assert p.grad is not None, name
        else:
            assert p.grad is None, name


@pytest.mark.parametrize("family", FAMILIES)
def test_frozen_tensors_bitwise_unchanged_after_steps(family: str) -> None:
    model, forward, opt = _grown(family)
    frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    before = snapshot(model)
    params = dict(model.named_parameters())
    for step in range(3):
        loss = forward.loss(model, tiny_batch(family, seed=step))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    assert frozen and all(torch.equal(params[n].detach(), before[n]) for n in frozen)
    assert all(not torch.equal(params[n].detach(), before[n]) for n in trainable)


@pytest.mark.parametrize("family", FAMILIES)
def test_unfreeze_all(family: str) -> None:
    model, _, _ = _grown(family)
    forward, opt = _enter(model, Stage(name="all", layers=4, steps=1, train="all"), 4)
    assert all(p.requires_grad for p in model.parameters())
    assert forward.frozen_prefix == 0 and forward.embeddings_trainable
    in_opt = {id(p) for g in opt.param_groups for p in g["params"]}
    assert in_opt == {id(p) for p in model.parameters()}
    forward.loss(model, tiny_batch(family)).backward()
    assert all(p.grad is not None for p in model.parameters())


# ---- optimizer_reset = false: Adam state carried over ----------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_adam_state_carries_over_a_stack(family: str) -> None:
    model = tiny_model(family, layers=2)
    forward, old = _enter(model, Stage(name="s", layers=2, steps=1, enter="init"), 0)
    for step in range(2):
        forward.loss(model, tiny_batch(family, seed=step)).backward()
        old.step()
        old.zero_grad(set_to_none=True)
    result = stack_layers(model, 2, "top")
    forward, new = _enter(model, Stage(name="g", layers=4, steps=1, enter="stack", train="new"), 2)
    counts = carry_optimizer_state(old, new, model, result)
    layers = get_layers(model)
    head = list(head_parameters(model))
    assert counts == {
        "kept": len(head),
        "copied": sum(1 for i in (2, 3) for _ in layers[i].parameters()),
        "fresh": 0,
    }
    for p in head:  # surviving params keep their own moments
        assert torch.equal(new.state[p]["exp_avg"], old.state[p]["exp_avg"])
        assert new.state[p]["exp_avg"] is not old.state[p]["exp_avg"]
    for dst, src in ((2, 0), (3, 1)):  # copies take their source's
        for (_, pd), (_, ps) in zip(
            layers[dst].named_parameters(), layers[src].named_parameters(), strict=True
        ):
            assert torch.equal(new.state[pd]["exp_avg_sq"], old.state[ps]["exp_avg_sq"])
            assert torch.equal(new.state[pd]["step"], old.state[ps]["step"])
    forward.loss(model, tiny_batch(family)).backward()
    new.step()  # the carried state is usable
    assert all(p not in new.state for p in layers[0].parameters())


def test_coalesced_model_starts_fresh() -> None:
    model = tiny_model("bert", layers=2)
    forward, old = _enter(model, Stage(name="s", layers=2, steps=1, enter="init"), 0)
    forward.loss(model, tiny_batch("bert")).backward()
    old.step()
    small, result = coalesce_model(model, width=True, depth=False)
    _, new = _enter(small, Stage(name="c", layers=2, steps=1, enter="coalesce"), 2)
    counts = carry_optimizer_state(old, new, small, result)
    assert counts["kept"] == counts["copied"] == 0 and counts["fresh"] > 0
