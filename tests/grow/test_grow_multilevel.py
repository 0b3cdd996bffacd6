"""Multi-level operators C, D and interpolation: width/depth matrices, round trips, function preservation, interpolation, head merge.

GPT-2's function-preservation cases (§5, tied pre-LN head) are in test_grow_gpt2.py.
"""

from __future__ import annotations

import itertools

import pytest
import torch
from grow_fixtures import (
    FAMILIES,
    VOCAB,
    logits,
    snapshot,
    state_equal,
    storages,
    tiny_batch,
    tiny_model,
)

from growcockpit.backend.loop.forward import StagedForward
from growcockpit.families import spec_for
from growcockpit.grow import (
    Grouping,
    averaging_matrix,
    coalesce_model,
    copying_matrix,
    decoalesce_model,
    depth_groups,
    get_layers,
    interpolate_model,
    model_shape,
    paired_groups,
)
from growcockpit.plan.families import family_facts

MODES = [(True, False), (False, True), (True, True)]  # (width, depth)
PAIRINGS = ["adjacent", "half"]


# ---- §7.3 the matrices ---------------------------------------------------------------------
@pytest.mark.parametrize(("size", "chunk"), [(32, 8), (64, 16), (48, 4), (8, 1), (64, 32)])
def test_width_matrices(size: int, chunk: int) -> None:
    groups = paired_groups(size, chunk)
    f = averaging_matrix(groups, size)
    t = copying_matrix(groups, size)
    assert f.shape == (size // 2, size) and t.shape == (size, size // 2)
    torch.testing.assert_close(f.sum(dim=1), torch.ones(size // 2, dtype=torch.float64))
    assert set(t.unique().tolist()) <= {0.0, 1.0}
    assert torch.equal(t.sum(dim=1), torch.ones(size, dtype=torch.float64))
    assert torch.equal(f @ t, torch.eye(size // 2, dtype=torch.float64))
    # head-aligned: chunk i pairs with chunk i + n/2, i.e. coordinate j with j + size/2
    assert all(b - a == size // 2 for a, b in groups)
    assert groups[0] == [0, size // 2]


@pytest.mark.parametrize("pairing", PAIRINGS)
@pytest.mark.parametrize("layers", [2, 4, 12])
def test_depth_matrices(layers: int, pairing: str) -> None:
    groups = depth_groups(layers, pairing)
    r = averaging_matrix(groups, layers)
    g = copying_matrix(groups, layers)
    eye = torch.eye(layers // 2, dtype=torch.float64)
    torch.testing.assert_close(r.sum(dim=1), torch.ones(layers // 2, dtype=torch.float64))
    assert torch.equal(r @ g, eye)
    gr = g @ r
    assert not torch.equal(gr, torch.eye(layers, dtype=torch.float64))
    torch.testing.assert_close(gr @ gr, gr)
    expected = (
        [[2 * i, 2 * i + 1] for i in range(layers // 2)]
        if pairing == "adjacent"
        else [[i, i + layers // 2] for i in range(layers // 2)]
    )
    assert groups == expected


def test_grouping_rejects_odd() -> None:
    with pytest.raises(ValueError, match="even"):
        paired_groups(24, 8)
    with pytest.raises(ValueError, match="depth 3"):
        depth_groups(3, "adjacent")
    with pytest.raises(ValueError, match="pairing"):
        depth_groups(4, "sideways")


def test_grouping_ops_equal_matrix_products() -> None:
    """The index-based maps compute exactly F·x, W·T, T·x and W·F."""
    g = Grouping.paired(16, 4)
    f = averaging_matrix(g.groups, 16)
    t = copying_matrix(g.groups, 16)
    torch.manual_seed(0)
    big = torch.randn(16, 16, dtype=torch.float64)
    small = torch.randn(8, 8, dtype=torch.float64)
    torch.testing.assert_close(g.mean(big, 0), f @ big)
    torch.testing.assert_close(g.sum(big, 1), big @ t)
    torch.testing.assert_close(g.copy(small, 0), t @ small)
    torch.testing.assert_close(g.split(small, 1), small @ f)
    torch.testing.assert_close(g.sum(g.mean(big, 0), 1), f @ big @ t)


# ---- §7.4 shapes and round trips -------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_coalesce_shape_table(family: str) -> None:
    model = tiny_model(family, layers=4, hidden=64, heads=4, ffn=128)
    small, result = coalesce_model(model, width=True, depth=True)
    big_s, small_s = model_shape(model), model_shape(small)
    assert (small_s.hidden, small_s.heads, small_s.ffn, small_s.layers) == (32, 2, 64, 2)
    assert small_s.head_dim == big_s.head_dim == 16
    assert type(small) is type(model)
    emb = small.get_input_embeddings().weight
    assert emb.shape == (VOCAB, 32)
    positions = {"bert": "bert.embeddings.position_embeddings", "gpt2": "transformer.wpe"}
    if family in positions:  # a learned position table (Llama's rotary has no weights)
        pos_big = model.get_submodule(positions[family]).weight
        assert small.get_submodule(positions[family]).weight.shape == (pos_big.shape[0], 32)
    assert len(get_layers(small)) == 2
    assert (result.from_layers, result.to_layers, result.from_width, result.to_width) == (
        4,
        2,
        64,
        32,
    )
    assert result.layer_sources == {0: [0, 1], 1: [2, 3]}
    # the output head stays tied to the word table where it was
    assert (small.get_output_embeddings().weight is emb) == family_facts(family).tied_head


@pytest.mark.parametrize("family", FAMILIES)
def test_coalesce_carries_config_and_leaves_input_alone(family: str) -> None:
    model = tiny_model(family)
    model.train()
    before = snapshot(model)
    small, _ = coalesce_model(model, width=True, depth=True)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert len(get_layers(model)) == 4
    assert not storages(small) & storages(model)
    assert small.training
    cfg, big = small.config, model.config
    assert cfg._attn_implementation == "sdpa"
    for key in ("vocab_size", "max_position_embeddings", "layer_norm_eps", "layer_norm_epsilon"):
        if hasattr(big, key):
            assert getattr(cfg, key) == getattr(big, key)
    drop = spec_for(family).dropout_keys
    assert all(getattr(cfg, k) == getattr(big, k) == 0.1 for k in drop)
    for i, layer in enumerate(get_layers(small)):
        assert all(getattr(m, "layer_idx", i) == i for m in layer.modules())
    if family == "bert":
        ids = small.bert.embeddings.position_ids
        assert torch.equal(ids, torch.arange(ids.shape[-1]).unsqueeze(0))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("pairing", PAIRINGS)
@pytest.mark.parametrize(("width", "depth"), MODES)
def test_round_trip_c_of_d_is_exact(family: str, pairing: str, width: bool, depth: bool) -> None:
    small = tiny_model(family, layers=2, hidden=16, heads=2, ffn=32, seed=3)
    big, _ = decoalesce_model(small, width=width, depth=depth, pairing=pairing)
    back, _ = coalesce_model(big, width=width, depth=depth, pairing=pairing)
    assert state_equal(back, small)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("pairing", PAIRINGS)
@pytest.mark.parametrize(("width", "depth"), MODES)
def test_d_of_c_has_shapes_not_values_and_is_idempotent(
    family: str, pairing: str, width: bool, depth: bool
) -> None:
    model = tiny_model(family)
    small, _ = coalesce_model(model, width=width, depth=depth, pairing=pairing)
    dc, _ = decoalesce_model(
        small, width=width, depth=depth, pairing=pairing, target_config=model.config
    )
    sm, sdc = model.state_dict(), dc.state_dict()
    assert {k: v.shape for k, v in sm.items()} == {k: v.shape for k, v in sdc.items()}
    assert not state_equal(dc, model)
    small2, _ = coalesce_model(dc, width=width, depth=depth, pairing=pairing)
    dcdc, _ = decoalesce_model(small2, width=width, depth=depth, pairing=pairing)
    assert state_equal(dcdc, dc)


def test_width_and_depth_commute() -> None:
    model = tiny_model("bert", dtype=torch.float64)
    a, _ = coalesce_model(
        coalesce_model(model, width=True, depth=False)[0], width=False, depth=True
    )
    b, _ = coalesce_model(
        coalesce_model(model, width=False, depth=True)[0], width=True, depth=False
    )
    c, _ = coalesce_model(model, width=True, depth=True)
    for k, v in c.state_dict().items():
        torch.testing.assert_close(a.state_dict()[k], v)
        torch.testing.assert_close(b.state_dict()[k], v)


@pytest.mark.parametrize("family", FAMILIES)
def test_decoalesce_depth_half_is_gong_stacking(family: str) -> None:
    from growcockpit.grow import stack_layers

    small = tiny_model(family, layers=2)
    big, result = decoalesce_model(small, width=False, depth=True, pairing="half")
    stacked = tiny_model(family, layers=2)
    stack_layers(stacked, 2, "bottom")
    assert state_equal(big, stacked)
    assert result.new_layer_ids == [2, 3] and result.source_of == {2: 0, 3: 1}
    inter, result = decoalesce_model(small, width=False, depth=True, pairing="adjacent")
    sb, si = small.state_dict(), inter.state_dict()
    layer = spec_for(family).layers_path
    for k, v in si.items():
        if k.startswith(layer + "."):
            j = int(k.split(".")[len(layer.split("."))])
            assert torch.equal(v, sb[k.replace(f"{layer}.{j}.", f"{layer}.{j // 2}.", 1)])
    assert result.layer_sources == {0: [0], 1: [0], 2: [1], 3: [1]}


def test_decoalesce_rejects_wrong_target() -> None:
    small = tiny_model("bert", layers=2, hidden=16, heads=2, ffn=32)
    other = tiny_model("bert", layers=4, hidden=64, heads=4, ffn=128)
    with pytest.raises(ValueError, match="cannot de-coalesce"):
        decoalesce_model(small, width=True, depth=True, target_config=other.config)
    with pytest.raises(ValueError, match="target_config is for"):
        decoalesce_model(small, width=True, depth=False, target_config=tiny_model("gpt2").config)


def test_coalesce_rejects_odd_shapes() -> None:
    with pytest.raises(ValueError, match="even"):
        coalesce_model(tiny_model("bert", hidden=24, heads=3, ffn=48), width=True, depth=False)
    with pytest.raises(ValueError, match="depth 3"):
        coalesce_model(tiny_model("bert", layers=3), width=False, depth=True)
    with pytest.raises(ValueError, match="width=True and/or depth=True"):
        coalesce_model(tiny_model("bert"), width=False, depth=False)


# ---- §7.5 function preservation (BERT, post-LN) ----------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_width_decoalesce_preserves_bert_mlm_logits(dtype: torch.dtype) -> None:
    small = tiny_model("bert", layers=2, hidden=32, heads=4, ffn=64, dtype=dtype).eval()
    big, _ = decoalesce_model(small, width=True, depth=False)
    big.eval()
    batch = tiny_batch("bert")
    rtol, atol = (1e-10, 1e-10) if dtype == torch.float64 else (1e-5, 1e-5)
    torch.testing.assert_close(
        logits(big, batch.input_ids), logits(small, batch.input_ids), rtol=rtol, atol=atol
    )
    with torch.no_grad():
        torch.testing.assert_close(
            StagedForward(0, True).loss(big, batch),
            StagedForward(0, True).loss(small, batch),
            rtol=rtol,
            atol=atol,
        )


def test_depth_decoalesce_changes_function() -> None:
    """Copying blocks is not function-preserving and is not required to be (§7.5)."""
    small = tiny_model("bert", layers=2).eval()
    big, _ = decoalesce_model(small, width=False, depth=True)
    ids = tiny_batch("bert").input_ids
    assert not torch.allclose(logits(big.eval(), ids), logits(small, ids))


# ---- §7.7 coalesced head merge ---------------------------------------------------------------
def test_coalesced_query_is_f_w_t_bert() -> None:
    model = tiny_model("bert", layers=2, hidden=32, heads=4, dtype=torch.float64)
    small, _ = coalesce_model(model, width=True, depth=False)
    d, n_h, d_h = 32, 4, 8
    groups = paired_groups(d, d_h)
    f, t = averaging_matrix(groups, d), copying_matrix(groups, d)
    for name in ("query", "key", "value"):
        w = model.get_submodule(f"bert.encoder.layer.1.attention.self.{name}").weight
        ws = small.get_submodule(f"bert.encoder.layer.1.attention.self.{name}").weight
        torch.testing.assert_close(ws, f @ w @ t)
        # head i of the small model: rows average source heads i and i + n_h/2, then
        # each pair of residual-input columns (j, j + d/2) is summed.
        heads = w.reshape(n_h, d_h, d)
        rows = (heads[: n_h // 2] + heads[n_h // 2 :]) / 2
        expected = rows[..., : d // 2] + rows[..., d // 2 :]
        torch.testing.assert_close(ws.reshape(n_h // 2, d_h, d // 2), expected)
        b, bs = (
            model.get_submodule(f"bert.encoder.layer.1.attention.self.{name}").bias,
            small.get_submodule(f"bert.encoder.layer.1.attention.self.{name}").bias,
        )
        torch.testing.assert_close(bs, f @ b)
    emb = model.bert.embeddings.word_embeddings.weight
    torch.testing.assert_close(small.bert.embeddings.word_embeddings.weight, 2 * emb @ f.T)
    ffn = model.bert.encoder.layer[0].intermediate.dense.weight  # (FFN, d)
    g_ffn = paired_groups(64, 64 // n_h)
    f_ffn = averaging_matrix(g_ffn, 64)
    torch.testing.assert_close(
        small.bert.encoder.layer[0].intermediate.dense.weight, f_ffn @ ffn @ t
    )


def test_coalesced_qkv_is_f_w_t_gpt2() -> None:
    """GPT-2 fuses Q|K|V in one Conv1D (in × out): each section is merged like BERT's."""
    model = tiny_model("gpt2", layers=2, hidden=32, heads=4, dtype=torch.float64)
    small, _ = coalesce_model(model, width=True, depth=False)
    d = 32
    groups = paired_groups(d, 8)
    f, t = averaging_matrix(groups, d), copying_matrix(groups, d)
    w = model.transformer.h[0].attn.c_attn.weight  # (d, 3d)
    ws = small.transformer.h[0].attn.c_attn.weight  # (d/2, 3d/2)
    for s in range(3):
        section = w[:, s * d : (s + 1) * d].T  # out × in
        torch.testing.assert_close(ws[:, s * d // 2 : (s + 1) * d // 2].T, f @ section @ t)
    # ln_f gets the preln-tied factor 2 (see coalesce.py), other LayerNorms F·v
    torch.testing.assert_close(small.transformer.ln_f.weight, 2 * f @ model.transformer.ln_f.weight)
    torch.testing.assert_close(
        small.transformer.h[0].ln_1.bias, f @ model.transformer.h[0].ln_1.bias
    )


def test_coalesce_depth_is_mean_of_group() -> None:
    model = tiny_model("bert", layers=4)
    for pairing, groups in (("adjacent", [(0, 1), (2, 3)]), ("half", [(0, 2), (1, 3)])):
        small, _ = coalesce_model(model, width=False, depth=True, pairing=pairing)
        for i, (a, b) in enumerate(groups):
            wa = model.bert.encoder.layer[a].output.dense.weight
            wb = model.bert.encoder.layer[b].output.dense.weight
            torch.testing.assert_close(
                small.bert.encoder.layer[i].output.dense.weight, (wa + wb) / 2
            )
        assert torch.equal(
            small.bert.embeddings.word_embeddings.weight,
            model.bert.embeddings.word_embeddings.weight,
        )


# ---- §7.6 interpolation ------------------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("width", "depth"), MODES)
def test_interpolation_endpoints_and_betweenness(family: str, width: bool, depth: bool) -> None:
    saved = tiny_model(family)
    small, _ = coalesce_model(saved, width=width, depth=depth)
    with torch.no_grad():  # "train" the small model a little
        for p in small.parameters():
            p.add_(0.05 * torch.randn_like(p))
    before = snapshot(saved)
    at0, _ = interpolate_model(saved, small, alpha=0.0, width=width, depth=depth)
    assert state_equal(at0, saved)
    at1, result = interpolate_model(saved, small, alpha=1.0, width=width, depth=depth)
    d_small, _ = decoalesce_model(small, width=width, depth=depth, target_config=saved.config)
    assert state_equal(at1, d_small)
    mid, _ = interpolate_model(saved, small, alpha=0.3, width=width, depth=depth)
    sd, ss, sm = d_small.state_dict(), saved.state_dict(), mid.state_dict()
    for k, v in sm.items():
        lo, hi = torch.minimum(ss[k], sd[k]), torch.maximum(ss[k], sd[k])
        assert bool(((v >= lo) & (v <= hi)).all()), k
        torch.testing.assert_close(v, 0.7 * ss[k] + 0.3 * sd[k])
    assert all(torch.equal(before[k], v) for k, v in saved.state_dict().items())
    assert not storages(mid) & storages(saved)
    assert result.operator == "interpolate" and result.to_width == 32
    assert model_shape(mid) == model_shape(saved)
    tied = mid.get_output_embeddings().weight is mid.get_input_embeddings().weight
    assert tied == family_facts(family).tied_head


def test_interpolation_rejects_mismatched_partner() -> None:
    saved = tiny_model("bert", layers=4)
    small, _ = coalesce_model(saved, width=True, depth=True)
    with pytest.raises(ValueError, match="partner must be"):
        interpolate_model(saved, small, alpha=0.5, width=True, depth=False)
    other = tiny_model("bert", layers=4, hidden=64, heads=4, ffn=128)
    with pytest.raises(ValueError, match="partner must be"):
        interpolate_model(other, small, alpha=0.5, width=True, depth=True)
    with pytest.raises(ValueError, match="is bert, the small model gpt2"):
        interpolate_model(
            saved,
            coalesce_model(tiny_model("gpt2"), width=True, depth=True)[0],
            alpha=0.5,
            width=True,
            depth=True,
        )
    with pytest.raises(ValueError, match="alpha"):
        interpolate_model(saved, small, alpha=1.5, width=True, depth=True)


# ---- results run through the backend's forward and the model's own --------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_results_train_through_staged_forward(family: str) -> None:
    model = tiny_model(family)
    small, _ = coalesce_model(model, width=True, depth=True)
    big, _ = decoalesce_model(small, width=True, depth=True)
    mixed, _ = interpolate_model(model, small, alpha=0.5, width=True, depth=True)
    batch = tiny_batch(family)
    for m in (small, big, mixed):
        m.train()
        loss = StagedForward(0, True).loss(m, batch)
        assert torch.isfinite(loss)
        loss.backward()
        assert all(p.grad is not None for p in m.parameters())
        out = m(input_ids=batch.input_ids, labels=batch.labels)
        assert torch.isfinite(out.loss)


def test_all_pairings_and_modes_build() -> None:
    """Every (family, pairing, width, depth) combination yields a consistent model."""
    for family, pairing, (width, depth) in itertools.product(FAMILIES, PAIRINGS, MODES):
        model = tiny_model(family, layers=2, hidden=16, heads=2, ffn=32)
        small, _ = coalesce_model(model, width=width, depth=depth, pairing=pairing)
        s = model_shape(small)
        assert s.layers == (1 if depth else 2) and s.hidden == (8 if width else 16)


@pytest.mark.parametrize("family", FAMILIES)
def test_bf16_round_trip_is_exact(family: str) -> None:
    """Copies and halvings are exact in any float format, so C∘D stays bitwise in bf16."""
    small = tiny_model(family, layers=2, hidden=16, heads=2, ffn=32, dtype=torch.bfloat16)
    big, _ = decoalesce_model(small, width=True, depth=True)
    assert big.get_input_embeddings().weight.dtype == torch.bfloat16
    back, _ = coalesce_model(big, width=True, depth=True)
    assert state_equal(back, small)
