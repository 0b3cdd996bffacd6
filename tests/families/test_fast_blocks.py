"""The families' fast block forwards (families/fast_blocks.py) against Hugging Face's own.

The fast path is only worth having if it is the same function: same loss and same
gradients (to float rounding: one fused matmul sums in another order than three), the
same dropout draws, the module hooks (timing, ramp gates) still around each block, and
nothing left on the model, so growth operators, checkpoints and exports see the plain
Hugging Face model whether or not it trained through the fast path.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
import torch
from grow_fixtures import FakeTokenizer, logits, state_equal, tiny_batch, tiny_model, tiny_spec
from torch import nn

from growcockpit.backend.data.blocks import Batch
from growcockpit.backend.loop.block_compile import BlockCompiler
from growcockpit.backend.loop.forward import StagedForward
from growcockpit.backend.model import build_model
from growcockpit.families import FAMILY_SPECS, spec_for
from growcockpit.grow import coalesce_model, get_layers, stack_layers
from growcockpit.grow.gates import BlockGates
from growcockpit.metrics import LayerTimer

FAST = [name for name in FAMILY_SPECS if spec_for(name).fast_forward() is not None]
TOL = 1e-6


def test_every_family_trains_through_a_fast_forward() -> None:
    assert {"bert", "gpt2", "llama"} <= set(FAST)


def grouped_llama() -> nn.Module:
    """A Llama with grouped-query attention (2 kv heads for 4 query heads)."""
    torch.manual_seed(0)
    spec = dataclasses.replace(tiny_spec("llama"), num_kv_heads=2)
    model = build_model(spec, 4, FakeTokenizer())  # type: ignore[arg-type]
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model


MODELS = {name: (lambda name=name: tiny_model(name)) for name in FAST} | {
    "llama-gqa": grouped_llama
}


def loss_and_grads(
    model: nn.Module, batch: Batch, fast: bool, compiler: BlockCompiler | None = None
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    torch.manual_seed(7)  # the same dropout draws for both paths
    loss = StagedForward(0, True, compiled=compiler, fast=fast).loss(model, batch)
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return loss.detach(), grads


def assert_same(
    a: tuple[torch.Tensor, dict[str, torch.Tensor]], b: tuple[torch.Tensor, dict[str, torch.Tensor]]
) -> None:
    assert abs(float(a[0]) - float(b[0])) <= TOL
    assert a[1].keys() == b[1].keys() and a[1]
    for name, grad in a[1].items():
        assert torch.allclose(grad, b[1][name], rtol=0, atol=TOL), name


@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_fast_forward_gives_hf_loss_and_gradients(name: str, mode: str) -> None:
    """In train mode with dropout 0.1: the same draws, hence the same masks."""
    model = MODELS[name]()
    model.train(mode == "train")
    batch = tiny_batch(name.split("-")[0])
    hf = loss_and_grads(model, batch, fast=False)
    fast = loss_and_grads(model, batch, fast=True)
    assert_same(fast, hf)
    if mode == "train":  # dropout really acts: another seed gives another loss
        torch.manual_seed(8)
        other = StagedForward(0, True).loss(model, batch)
        assert abs(float(other) - float(hf[0])) > 1e-4


@pytest.mark.parametrize("family", FAST)
def test_fast_forward_with_a_frozen_bottom(family: str) -> None:
    model = tiny_model(family)
    model.eval()
    for p in get_layers(model)[:2].parameters():
        p.requires_grad_(False)
    batch = tiny_batch(family)
    runs = []
    for fast in (False, True):
        model.zero_grad(set_to_none=True)
        forward = StagedForward.for_stage([2, 3], 4, embeddings_trainable=False)
        forward.fast = fast
        loss = forward.loss(model, batch)
        loss.backward()
        runs.append(
            (loss.detach(), {n: p.grad for n, p in model.named_parameters() if p.grad is not None})
        )
    assert_same(runs[1], runs[0])


@pytest.mark.parametrize("family", FAST)
def test_fast_path_leaves_the_model_as_hf_built_it(family: str) -> None:
    """No attribute stays on a block, the weights are bitwise untouched, and a growth
    operator after the fast path equals the same operator on a model that never ran it."""
    model, never = tiny_model(family), tiny_model(family)
    model.train()
    StagedForward(0, True).loss(model, tiny_batch(family)).backward()
    model.zero_grad(set_to_none=True)
    assert all("forward" not in vars(block) for block in get_layers(model))
    assert state_equal(model, never)
    ids = tiny_batch(family).input_ids
    stack_layers(model, 2, "top"), stack_layers(never, 2, "top")
    assert state_equal(model, never)
    assert torch.equal(logits(model.eval(), ids), logits(never.eval(), ids))
    small, _ = coalesce_model(copy.deepcopy(model), width=True, depth=False)
    small_never, _ = coalesce_model(copy.deepcopy(never), width=True, depth=False)
    assert state_equal(small, small_never)


@pytest.mark.parametrize("family", FAST)
def test_hooks_still_run_around_a_fast_block(family: str) -> None:
    """A gate at 0 keeps a stacked copy the identity, and the per-layer timer times every
    block, through the fast forward as through HF's."""
    model = tiny_model(family, layers=2)
    model.eval()
    batch = tiny_batch(family)
    before = StagedForward(0, True).loss(model, batch).detach()
    result = stack_layers(model, 2, "top")
    BlockGates(get_layers(model), result.new_layer_ids)
    after = StagedForward(0, True).loss(model, batch).detach()
    assert abs(float(after) - float(before)) <= TOL
    timer = LayerTimer(torch.device("cpu"))
    timer.attach(get_layers(model))
    StagedForward(0, True).loss(model, batch).backward()
    timer.backward_done()
    fwd_ms, _ = timer.result()
    timer.detach()
    assert len(fwd_ms) == 4 and all(ms is not None for ms in fwd_ms)


@pytest.mark.parametrize("family", FAST)
def test_compiled_fast_forward_matches_hf(family: str) -> None:
    """`optim.compile` compiles the fast forward (aot_eager here: seconds, no C compiler)."""
    model = tiny_model(family, layers=2)
    model.eval()
    batch = tiny_batch(family)
    hf = loss_and_grads(model, batch, fast=False)
    compiled = loss_and_grads(model, batch, fast=True, compiler=BlockCompiler("aot_eager"))
    assert_same(compiled, hf)


@pytest.mark.parametrize("family", FAST)
def test_a_model_trained_through_the_fast_path_reloads_with_from_pretrained(
    family: str, tmp_path: Path
) -> None:
    """`final/` is `save_pretrained`: after fast-path updates it loads as HF's own class,
    with the same logits."""
    model = tiny_model(family)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(2):
        StagedForward(0, True).loss(model, tiny_batch(family)).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    model.save_pretrained(tmp_path)  # type: ignore[operator]
    loaded = spec_for(family).model_class.from_pretrained(tmp_path)
    assert type(loaded) is spec_for(family).model_class
    ids = tiny_batch(family).input_ids
    assert torch.equal(logits(loaded.eval(), ids), logits(model.eval(), ids))
