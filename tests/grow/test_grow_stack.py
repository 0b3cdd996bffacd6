"""Depth growth by stacking: Gong bottom, MSLT top, and the LiGO cross-check."""

from __future__ import annotations

import pytest
import torch
from grow_fixtures import FAMILIES, snapshot, state_equal, tiny_batch, tiny_model
from torch import nn

from growcockpit.backend.loop.forward import StagedForward
from growcockpit.families import spec_of
from growcockpit.grow import decoalesce_model, get_layers, stack_layers
from growcockpit.grow.model_parts import embedding_modules, head_parameters
from growcockpit.plan.families import family_facts


def _layer_equal(a: nn.Module, b: nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def _non_layer_state(model: nn.Module) -> dict[str, torch.Tensor]:
    layer = spec_of(model).layers_path + "."
    return {k: v for k, v in snapshot(model).items() if not k.startswith(layer)}


@pytest.mark.parametrize("family", FAMILIES)
def test_gong_bottom_doubles_bitwise(family: str) -> None:
    model = tiny_model(family, layers=3)
    old = [m for m in get_layers(model)]
    outside = _non_layer_state(model)
    emb_ids = [id(m) for m in embedding_modules(model)]
    head_ids = [id(p) for p in head_parameters(model)]
    result = stack_layers(model, 3, "bottom")
    layers = get_layers(model)
    assert len(layers) == 6 and model.config.num_hidden_layers == 6
    for i in range(3):
        assert layers[i] is old[i]
        assert _layer_equal(layers[i + 3], layers[i])
        ptrs = {p.untyped_storage().data_ptr() for p in layers[i].parameters()}
        assert not ptrs & {p.untyped_storage().data_ptr() for p in layers[i + 3].parameters()}
    # E, P and H unchanged (same modules, same values), still tied where they were
    after = _non_layer_state(model)
    assert after.keys() == outside.keys()
    assert all(torch.equal(after[k], v) for k, v in outside.items())
    assert [id(m) for m in embedding_modules(model)] == emb_ids
    assert [id(p) for p in head_parameters(model)] == head_ids
    tied = model.get_output_embeddings().weight is model.get_input_embeddings().weight
    assert tied == family_facts(family).tied_head
    assert result.new_layer_ids == [3, 4, 5] and result.source_of == {3: 0, 4: 1, 5: 2}
    assert result.layer_sources[4] == [1] and result.layer_sources[1] == [1]
    for i, layer in enumerate(layers):
        assert all(getattr(m, "layer_idx", i) == i for m in layer.modules())
    # the copy trains independently of its source
    with torch.no_grad():
        next(layers[3].parameters()).add_(1.0)
    assert not _layer_equal(layers[3], layers[0])


@pytest.mark.parametrize("family", FAMILIES)
def test_mslt_top_copies_top_k_in_order(family: str) -> None:
    model = tiny_model(family, layers=4)
    before = [snapshot(layer) for layer in get_layers(model)]
    result = stack_layers(model, 2, "top")
    layers = get_layers(model)
    assert result.source_of == {4: 2, 5: 3}
    for new, src in ((4, 2), (5, 3)):
        state = layers[new].state_dict()
        assert all(torch.equal(state[k], v) for k, v in before[src].items())
    loss = StagedForward(0, True).loss(model, tiny_batch(family))
    assert torch.isfinite(loss)


def test_top_with_k_beyond_depth_cycles_ending_at_the_top() -> None:
    model = tiny_model("gpt2", layers=2)
    before = [snapshot(layer) for layer in get_layers(model)]
    result = stack_layers(model, 5, "top")
    assert [result.source_of[i] for i in range(2, 7)] == [1, 0, 1, 0, 1]
    layers = get_layers(model)
    for new, src in result.source_of.items():
        assert src is not None
        state = layers[new].state_dict()
        assert all(torch.equal(state[k], v) for k, v in before[src].items())
    # k == depth: the whole stack once, in order (what Gong's bottom copy also gives)
    other = tiny_model("gpt2", layers=2)
    assert stack_layers(other, 2, "top").source_of == {2: 0, 3: 1}


def test_bottom_beyond_depth_and_bad_args_rejected() -> None:
    model = tiny_model("bert", layers=2)
    with pytest.raises(ValueError, match="bottom"):
        stack_layers(model, 3, "bottom")
    with pytest.raises(ValueError, match="k >= 1"):
        stack_layers(model, 0, "top")
    with pytest.raises(ValueError, match="unknown stack source"):
        stack_layers(model, 1, "sideways")


@pytest.mark.parametrize("family", FAMILIES)
def test_random_source_gives_fresh_layers(family: str) -> None:
    model = tiny_model(family, layers=2)
    result = stack_layers(model, 2, "random")
    layers = get_layers(model)
    assert result.source_of == {2: None, 3: None}
    assert not any(_layer_equal(layers[new], layers[old]) for new in (2, 3) for old in (0, 1))
    assert torch.isfinite(StagedForward(0, True).loss(model, tiny_batch(family)))


# ---- §7.9 LiGO cross-check -------------------------------------------------------------------
def _ligo_depth(small: nn.Module, coefficients: torch.Tensor) -> nn.Module:
    """LiGO's depth operator: large block l's tensors = Σ_j c[l, j] · small block j's.

    Built on a deep copy of `small` stacked to the target depth (so the module
    structure is right), then every block tensor overwritten by its mix.
    """
    import copy

    large_depth, small_depth = coefficients.shape
    large = copy.deepcopy(small)
    stack_layers(large, large_depth - small_depth, "random")
    src = [layer.state_dict() for layer in get_layers(small)]
    with torch.no_grad():
        for dst, layer in enumerate(get_layers(large)):
            for name, tensor in layer.state_dict().items():
                tensor.copy_(sum(coefficients[dst, j] * src[j][name] for j in range(small_depth)))
    return large


@pytest.mark.parametrize("family", FAMILIES)
def test_ligo_one_hot_stack_init_reproduces_gong(family: str) -> None:
    small = tiny_model(family, layers=3)
    l_s, l_big = 3, 6
    stack_init = torch.zeros(l_big, l_s)
    for dst in range(l_big):
        stack_init[dst, dst % l_s] = 1.0
    ligo = _ligo_depth(small, stack_init)
    gong = tiny_model(family, layers=3)
    stack_layers(gong, 3, "bottom")
    assert state_equal(ligo, gong)
    # LiGO's interlace init (⌊l/2⌋) is the multi-level D with adjacent pairing
    interlace = torch.zeros(l_big, l_s)
    for dst in range(l_big):
        interlace[dst, dst // 2] = 1.0
    d_adjacent, _ = decoalesce_model(small, width=False, depth=True, pairing="adjacent")
    assert state_equal(_ligo_depth(small, interlace), d_adjacent)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("depth", "k", "start"), [(4, 2, 1), (5, 2, 1), (6, 2, 2), (3, 3, 0)])
def test_middle_inserts_copies_after_the_middle_blocks(
    family: str, depth: int, k: int, start: int
) -> None:
    model = tiny_model(family, layers=depth)
    old = list(get_layers(model))
    before = [snapshot(layer) for layer in old]
    result = stack_layers(model, k, "middle")
    layers = get_layers(model)
    ids = list(range(start + k, start + 2 * k))
    assert result.new_layer_ids == ids
    assert result.source_of == {start + k + i: start + i for i in range(k)}
    # old blocks keep their order: the ones up to the copied group stay, the rest shift up by k
    assert [layers[j] for j in range(depth + k) if j not in ids] == old
    for i in range(k):
        copy_, src = layers[start + k + i], layers[start + i]
        assert copy_ is not src and _layer_equal(copy_, src)
        assert all(torch.equal(v, before[start + i][n]) for n, v in copy_.state_dict().items())
    assert result.layer_sources[depth + k - 1] == [depth - 1]
    assert all(getattr(m, "layer_idx", j) == j for j, ly in enumerate(layers) for m in ly.modules())
