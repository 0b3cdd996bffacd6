"""`family = "llama"`: its own [model] keys, their rules, and the cost model's Llama terms."""

from __future__ import annotations

import pytest

from growcockpit.plan import ModelSpec, loads_plan, text_problems
from growcockpit.plan.cost import block_params, default_head_cost
from growcockpit.plan.save import dump_plan


def llama(extra: str = "", *, family: str = "llama", stages: str = "") -> str:
    return (
        f'name = "t"\n[model]\nfamily = "{family}"\nhidden_size = 64\nnum_heads = 4\n'
        f"intermediate_size = 192\nmax_seq_len = 64\nfinal_layers = 4\n{extra}\n"
        '[data]\ntokenizer = "train:1000"\n'
        + (stages or '[[stages]]\nname = "a"\nlayers = 4\nsteps = 10\n')
    )


def problems(text: str) -> list[str]:
    return [str(p) for p in text_problems(text, source="p.toml")]


def test_a_llama_plan_with_its_keys_loads_and_round_trips() -> None:
    text = llama(
        "num_kv_heads = 2\nrope_theta = 500000.0\ntie_embeddings = true\nrms_norm_eps = 1e-5"
    )
    plan = loads_plan(text)
    m = plan.model
    assert (m.kv_heads, m.rope_theta, m.tie_embeddings, m.rms_norm_eps) == (2, 5e5, True, 1e-5)
    again = loads_plan(dump_plan(plan))
    assert again.model == m


def test_left_out_keys_take_the_family_defaults() -> None:
    m = loads_plan(llama()).model
    assert m.kv_heads == 4
    assert m.family_value("rope_theta") == 10000.0
    assert m.family_value("tie_embeddings") is False


@pytest.mark.parametrize(
    ("extra", "key", "words"),
    [
        (
            "num_kv_heads = 3",
            "model.num_kv_heads",
            "does not divide num_heads = 4",
        ),
        ("num_kv_heads = 0", "model.num_kv_heads", "positive integer"),
        ("rope_theta = 0.5", "model.rope_theta", "above 1"),
        ("rms_norm_eps = 2.0", "model.rms_norm_eps", "(0, 1)"),
    ],
)
def test_bad_llama_keys_name_the_key_and_the_fix(extra: str, key: str, words: str) -> None:
    found = problems(llama(extra))
    assert any(f"{key}:" in p and words in p for p in found), found
    assert all(p.startswith("p.toml:") for p in found)


def test_a_llama_key_on_another_family_is_refused_not_ignored() -> None:
    found = problems(llama("num_kv_heads = 2", family="gpt2"))
    assert any(
        'model.num_kv_heads: only applies to family = "llama", not "gpt2"' in p for p in found
    ), found


VCYCLE = (
    '[[stages]]\nname = "a"\nlayers = 4\nsteps = 5\n'
    '[[stages]]\nname = "b"\nlayers = 2\nwidth = 32\nenter = "coalesce"\nsteps = 5\n'
    '[[stages]]\nname = "c"\nlayers = 4\nwidth = 64\nenter = "interpolate"\nsteps = 5\n'
)


def test_width_coalescing_needs_an_untied_head_and_even_kv_heads() -> None:
    assert problems(llama("num_kv_heads = 2", stages=VCYCLE)) == []
    tied = problems(llama("num_kv_heads = 2\ntie_embeddings = true", stages=VCYCLE))
    assert any("stages[1].enter" in p and "tie_embeddings = false" in p for p in tied), tied
    odd = problems(llama("num_kv_heads = 1", stages=VCYCLE))
    assert any("stages[1].enter" in p and "num_kv_heads = 1 is odd" in p for p in odd), odd


def test_cost_model_prices_swiglu_gqa_and_keeps_bert_gpt2_unchanged() -> None:
    gpt2 = ModelSpec(family="gpt2", hidden_size=64, num_heads=4, intermediate_size=256)
    assert block_params(gpt2) == 4 * 64 * 64 + 2 * 64 * 256
    mha = ModelSpec(family="llama", hidden_size=64, num_heads=4, intermediate_size=192)
    gqa = ModelSpec(
        family="llama", hidden_size=64, num_heads=4, num_kv_heads=1, intermediate_size=192
    )
    assert block_params(mha) == 2 * 64 * 64 + 2 * 64 * 64 + 3 * 64 * 192
    assert block_params(gqa) == 2 * 64 * 64 + 2 * 64 * 16 + 3 * 64 * 192
    assert block_params(gqa, 32) == 2 * 32 * 32 + 2 * 32 * 8 + 3 * 32 * 96
    plan = loads_plan(llama("num_kv_heads = 1"))
    assert default_head_cost(plan) == pytest.approx(1000 * 64 / block_params(plan.model))


def test_an_untied_head_that_trains_pays_its_weight_gradient() -> None:
    """With the embeddings frozen a tied head needs only an input gradient; an untied one
    (Llama's default) that trains also computes its weight gradient: r · h more."""
    from growcockpit.plan.cost import head_is_tied, step_cost

    kw = {"r": 2.0, "h": 3.0, "refined": True, "embeddings_trainable": False}
    tied = step_cost(6, 2, tied_head=True, **kw)  # type: ignore[arg-type]
    untied = step_cost(6, 2, tied_head=False, **kw)  # type: ignore[arg-type]
    assert untied - tied == pytest.approx(2.0 / 2 * 3.0)  # (1 + r) h − (1 + r/2) h
    frozen_head = step_cost(6, 2, tied_head=False, head_trainable=False, **kw)  # type: ignore[arg-type]
    assert frozen_head == pytest.approx(tied)
    assert not head_is_tied(loads_plan(llama()).model)
    assert head_is_tied(loads_plan(llama("tie_embeddings = true")).model)
    assert head_is_tied(ModelSpec(family="gpt2"))
