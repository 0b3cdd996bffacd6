"""The width operators called directly (the public API), not through a plan.

- `decoalesce` in width on a Llama with tied embeddings changed the logits (by up to 4.9):
  the shared token table took the head's rule. It is refused, naming the tie.
- a Llama whose head_dim is not hidden / heads was refused with "axis 0 of a (64, 32)
  tensor is not 32 long"; now width operators refuse naming head_dim, depth ones work.
- an FFN width not divisible by the head count was refused, though the MLP's pairing
  (unit j with unit j + FFN/2) only needs an even width.
"""

from __future__ import annotations

import pytest
import torch
from grow_fixtures import logits, tiny_batch, tiny_model
from transformers import LlamaConfig, LlamaForCausalLM

from growcockpit.families import ModelShape
from growcockpit.grow.coalesce import coalesce_model, width_groupings
from growcockpit.grow.decoalesce import decoalesce_model
from growcockpit.grow.width import paired_groups


def tied_llama() -> torch.nn.Module:
    model = tiny_model("llama", layers=2)
    config = model.config
    config.tie_word_embeddings = True
    torch.manual_seed(0)
    tied = LlamaForCausalLM(config)
    assert tied.lm_head.weight is tied.model.embed_tokens.weight
    return tied


@pytest.mark.parametrize("op", [decoalesce_model, coalesce_model])
def test_width_on_a_tied_llama_is_refused_naming_the_tie(op: object) -> None:
    with pytest.raises(ValueError, match="tied embeddings.*tie_word_embeddings"):
        op(tied_llama(), width=True, depth=False)  # type: ignore[operator]


def test_depth_on_a_tied_llama_still_works() -> None:
    new, _ = decoalesce_model(tied_llama(), width=False, depth=True)
    assert new.config.num_hidden_layers == 4


def odd_head_dim_llama() -> torch.nn.Module:
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=32,  # not 32 / 2 = 16: q_proj is (64, 32)
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config)


@pytest.mark.parametrize("op", [decoalesce_model, coalesce_model])
def test_a_head_dim_other_than_hidden_over_heads_is_refused_by_name(op: object) -> None:
    with pytest.raises(ValueError, match=r"head_dim = 32 is not hidden_size / num_attention_heads"):
        op(odd_head_dim_llama(), width=True, depth=False)  # type: ignore[operator]


def test_depth_operators_keep_the_head_dim() -> None:
    model = odd_head_dim_llama()
    new, _ = decoalesce_model(model, width=False, depth=True)
    assert new.config.head_dim == 32 and new.model.layers[0].self_attn.q_proj.weight.shape == (
        64,
        32,
    )
    ids = tiny_batch("llama").input_ids % 64
    assert torch.isfinite(logits(new, ids)).all()


def test_an_ffn_not_divisible_by_the_heads_is_grouped_in_halves() -> None:
    shape = ModelShape(hidden=32, heads=4, ffn=36, layers=2)  # 36 % 4 == 0 but 36 / 4 odd
    assert width_groupings(shape)["ffn"].size == 36
    shape = ModelShape(hidden=32, heads=4, ffn=42, layers=2)  # 42 % 4 != 0
    assert width_groupings(shape)["ffn"].size == 42
    assert paired_groups(64, 32) == paired_groups(64, 64 // 4), "the same pairs where n_h | FFN"
    with pytest.raises(ValueError, match="even FFN width"):
        width_groupings(ModelShape(hidden=32, heads=4, ffn=43, layers=2))


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_decoalesce_of_an_ffn_not_divisible_by_the_heads_keeps_the_function(family: str) -> None:
    model = tiny_model(family, layers=2, heads=4, ffn=42).eval()
    ids = tiny_batch(family).input_ids
    new, _ = decoalesce_model(model, width=True, depth=False)
    size = new.config.intermediate_size if family == "llama" else new.config.n_inner
    assert size == 84
    torch.testing.assert_close(logits(new.eval(), ids), logits(model, ids), atol=1e-4, rtol=1e-4)
    back, _ = coalesce_model(new, width=True, depth=False)
    assert all(
        torch.equal(a, b)
        for a, b in zip(back.state_dict().values(), model.state_dict().values(), strict=True)
    )
