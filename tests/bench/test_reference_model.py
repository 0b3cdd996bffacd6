"""The reference model (bench/reference/) is the product's math: loaded with a product
model's weights it gives the same loss to 1e-5, for every family, at full depth and with a
stage's frozen bottom, and its gradients match the product's on the trainable tensors."""

from __future__ import annotations

import sys

import pytest
import torch
from grow_fixtures import tiny_batch, tiny_model
from repo_paths import REPO

sys.path[:0] = [str(REPO / "bench"), str(REPO / "bench" / "gpu")]

from reference.weights import from_hf  # noqa: E402

from growcockpit.backend.loop.forward import StagedForward  # noqa: E402
from growcockpit.grow import apply_freeze  # noqa: E402

FAMILIES = ("gpt2", "bert", "llama")


def _losses(
    family: str, trainable: list[int] | None
) -> tuple[torch.Tensor, torch.Tensor, object, object]:
    model = tiny_model(family, layers=4)
    model.eval()  # dropout off: the same numbers, not the same random masks
    batch = tiny_batch(family, batch=3, seq=12)
    if trainable is None:
        fwd = StagedForward(0, True)
    else:
        result = apply_freeze(model, trainable, False, True)
        fwd = StagedForward.for_stage(result.trainable_layers, 4, result.embeddings_trainable)
    ref = from_hf(model, fwd.frozen_prefix, fwd.embeddings_trainable)
    ours = fwd.loss(model, batch)
    theirs = ref.loss(batch.input_ids, batch.labels, batch.picked)
    return ours, theirs, model, ref


@pytest.mark.parametrize("family", FAMILIES)
def test_the_reference_gives_the_products_loss(family: str) -> None:
    ours, theirs, _, _ = _losses(family, None)
    assert abs(ours.item() - theirs.item()) < 1e-5, (ours.item(), theirs.item())


@pytest.mark.parametrize("family", FAMILIES)
def test_a_stage_with_a_frozen_bottom_gives_the_same_loss_and_gradients(family: str) -> None:
    ours, theirs, model, ref = _losses(family, [2, 3])
    assert abs(ours.item() - theirs.item()) < 1e-5
    ours.backward()
    theirs.backward()
    trainable = [p for p in ref.parameters() if p.requires_grad]
    hf_trainable = [p for p in model.parameters() if p.requires_grad]
    assert sum(p.numel() for p in trainable) == sum(p.numel() for p in hf_trainable)
    layer = {"gpt2": "transformer.h", "bert": "bert.encoder.layer", "llama": "model.layers"}[family]
    hf_out = model.get_submodule(f"{layer}.3")
    down = {"gpt2": "mlp.c_proj", "bert": "output.dense", "llama": "mlp.down_proj"}[family]
    g_hf = hf_out.get_submodule(down).weight.grad
    g_ref = ref.blocks[3].out.weight.grad
    assert g_hf is not None and g_ref is not None
    g_hf = g_hf.t() if family == "gpt2" else g_hf
    torch.testing.assert_close(g_ref, g_hf, atol=1e-5, rtol=1e-4)
    assert all(p.grad is None for p in ref.blocks[0].parameters())


def test_the_reference_differs_when_a_weight_differs() -> None:
    """The equality above is not vacuous: one perturbed tensor moves the loss."""
    _, theirs, _, ref = _losses("llama", None)
    batch = tiny_batch("llama", batch=3, seq=12)
    with torch.no_grad():
        ref.blocks[1].qkv.weight[0, 0] += 0.5
    moved = ref.loss(batch.input_ids, batch.labels, batch.picked)
    assert abs(moved.item() - theirs.item()) > 1e-5


def test_grouped_query_attention_matches() -> None:
    """Llama with 4 query heads over 2 kv heads (SmolLM's grouping): the same loss."""
    from dataclasses import replace

    from grow_fixtures import FakeTokenizer, tiny_spec

    from growcockpit.backend.model import build_model

    torch.manual_seed(0)
    spec = replace(tiny_spec("llama"), num_kv_heads=2)
    model = build_model(spec, 3, FakeTokenizer()).eval()  # type: ignore[arg-type]
    batch = tiny_batch("llama", batch=2, seq=10)
    ours = StagedForward(0, True).loss(model, batch)
    ref = from_hf(model)
    assert ref.s.kv_heads == 2
    theirs = ref.loss(batch.input_ids, batch.labels, batch.picked)
    assert abs(ours.item() - theirs.item()) < 1e-5
