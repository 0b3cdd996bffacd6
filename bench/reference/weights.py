"""The weight map: a product (Hugging Face) model's tensors into the reference model.

One table per family names, for every reference tensor, the HF tensors it is made
of and how (GPT-2's Conv1D weights are stored in × out and are transposed; BERT's
separate query/key/value and Llama's q/k/v and gate/up are concatenated into one
fused projection). The reference copies the trainable flags and train/eval modes
too, so a stage's frozen layers are frozen in both and the two steps do the same work.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from reference.model import Family, ReferenceModel, RefShape

# reference name (block-relative for blocks) -> (HF names, how to join them)
Rule = tuple[tuple[str, ...], str]  # join: "copy" | "t" (transpose) | "cat" | "row0"

BLOCK_RULES: dict[Family, dict[str, Rule]] = {
    "gpt2": {
        "norm1.weight": (("ln_1.weight",), "copy"),
        "norm1.bias": (("ln_1.bias",), "copy"),
        "qkv.weight": (("attn.c_attn.weight",), "t"),
        "qkv.bias": (("attn.c_attn.bias",), "copy"),
        "proj.weight": (("attn.c_proj.weight",), "t"),
        "proj.bias": (("attn.c_proj.bias",), "copy"),
        "norm2.weight": (("ln_2.weight",), "copy"),
        "norm2.bias": (("ln_2.bias",), "copy"),
        "fc.weight": (("mlp.c_fc.weight",), "t"),
        "fc.bias": (("mlp.c_fc.bias",), "copy"),
        "out.weight": (("mlp.c_proj.weight",), "t"),
        "out.bias": (("mlp.c_proj.bias",), "copy"),
    },
    "bert": {
        "qkv.weight": (
            tuple(f"attention.self.{n}.weight" for n in ("query", "key", "value")),
            "cat",
        ),
        "qkv.bias": (tuple(f"attention.self.{n}.bias" for n in ("query", "key", "value")), "cat"),
        "proj.weight": (("attention.output.dense.weight",), "copy"),
        "proj.bias": (("attention.output.dense.bias",), "copy"),
        "norm1.weight": (("attention.output.LayerNorm.weight",), "copy"),
        "norm1.bias": (("attention.output.LayerNorm.bias",), "copy"),
        "fc.weight": (("intermediate.dense.weight",), "copy"),
        "fc.bias": (("intermediate.dense.bias",), "copy"),
        "out.weight": (("output.dense.weight",), "copy"),
        "out.bias": (("output.dense.bias",), "copy"),
        "norm2.weight": (("output.LayerNorm.weight",), "copy"),
        "norm2.bias": (("output.LayerNorm.bias",), "copy"),
    },
    "llama": {
        "norm1.weight": (("input_layernorm.weight",), "copy"),
        "qkv.weight": (tuple(f"self_attn.{n}_proj.weight" for n in "qkv"), "cat"),
        "proj.weight": (("self_attn.o_proj.weight",), "copy"),
        "norm2.weight": (("post_attention_layernorm.weight",), "copy"),
        "fc.weight": (("mlp.gate_proj.weight", "mlp.up_proj.weight"), "cat"),
        "out.weight": (("mlp.down_proj.weight",), "copy"),
    },
}

OUTER_RULES: dict[Family, dict[str, Rule]] = {
    "gpt2": {
        "tok.weight": (("transformer.wte.weight",), "copy"),
        "pos.weight": (("transformer.wpe.weight",), "copy"),
        "final_norm.weight": (("transformer.ln_f.weight",), "copy"),
        "final_norm.bias": (("transformer.ln_f.bias",), "copy"),
    },
    "bert": {
        "tok.weight": (("bert.embeddings.word_embeddings.weight",), "copy"),
        "pos.weight": (("bert.embeddings.position_embeddings.weight",), "copy"),
        "type0": (("bert.embeddings.token_type_embeddings.weight",), "row0"),
        "emb_norm.weight": (("bert.embeddings.LayerNorm.weight",), "copy"),
        "emb_norm.bias": (("bert.embeddings.LayerNorm.bias",), "copy"),
        "transform.weight": (("cls.predictions.transform.dense.weight",), "copy"),
        "transform.bias": (("cls.predictions.transform.dense.bias",), "copy"),
        "final_norm.weight": (("cls.predictions.transform.LayerNorm.weight",), "copy"),
        "final_norm.bias": (("cls.predictions.transform.LayerNorm.bias",), "copy"),
        "head_bias": (("cls.predictions.bias",), "copy"),
    },
    "llama": {
        "tok.weight": (("model.embed_tokens.weight",), "copy"),
        "final_norm.weight": (("model.norm.weight",), "copy"),
        "head.weight": (("lm_head.weight",), "copy"),
    },
}

LAYERS_PATH: dict[Family, str] = {
    "gpt2": "transformer.h",
    "bert": "bert.encoder.layer",
    "llama": "model.layers",
}

JOINS: dict[str, Callable[[list[torch.Tensor]], torch.Tensor]] = {
    "copy": lambda ts: ts[0],
    "t": lambda ts: ts[0].t(),
    "cat": lambda ts: torch.cat(ts, dim=0),
    "row0": lambda ts: ts[0][0],
}


def shape_of(model: nn.Module) -> RefShape:
    """The reference's shape from the HF config the product built."""
    c = model.config  # type: ignore[union-attr]
    family: Family = c.model_type
    if family == "gpt2":
        ffn = c.n_inner if c.n_inner is not None else 4 * c.n_embd
        return RefShape(
            "gpt2", c.vocab_size, c.n_embd, c.n_head, c.n_head, ffn, c.n_layer,
            c.n_positions, c.layer_norm_epsilon, c.resid_pdrop,
        )  # fmt: skip
    if family == "bert":
        return RefShape(
            "bert", c.vocab_size, c.hidden_size, c.num_attention_heads, c.num_attention_heads,
            c.intermediate_size, c.num_hidden_layers, c.max_position_embeddings,
            c.layer_norm_eps, c.hidden_dropout_prob,
        )  # fmt: skip
    if family == "llama":
        theta = c.rope_parameters["rope_theta"]
        return RefShape(
            "llama", c.vocab_size, c.hidden_size, c.num_attention_heads, c.num_key_value_heads,
            c.intermediate_size, c.num_hidden_layers, c.max_position_embeddings, c.rms_norm_eps,
            c.attention_dropout, float(theta), bool(c.tie_word_embeddings),
        )  # fmt: skip
    raise SystemExit(f"reference: family {family!r} has no reference model (gpt2, bert, llama)")


def hf_tensors(model: nn.Module) -> dict[str, nn.Parameter]:
    return dict(model.named_parameters(remove_duplicate=False))


def _load(
    target: ReferenceModel, name: str, rule: Rule, prefix: str, hf: dict[str, nn.Parameter]
) -> None:
    sources, join = rule
    params = [hf[prefix + n] for n in sources]
    value = JOINS[join]([p.detach() for p in params])
    mine = target.get_parameter(name)
    with torch.no_grad():
        mine.copy_(value)
    mine.requires_grad_(any(p.requires_grad for p in params))


def from_hf(
    model: nn.Module, frozen_prefix: int = 0, embeddings_train: bool = True
) -> ReferenceModel:
    """A reference model holding `model`'s weights, trainable flags and train/eval modes,
    on its device and dtype; `frozen_prefix`/`embeddings_train` as the stage's StagedForward."""
    s = shape_of(model)
    first = next(model.parameters())
    ref = ReferenceModel(s).to(device=first.device, dtype=first.dtype)
    hf = hf_tensors(model)
    family = s.family
    for name, rule in OUTER_RULES[family].items():
        if name == "head.weight" and ref.head is None:
            continue
        _load(ref, name, rule, "", hf)
    layers = model.get_submodule(LAYERS_PATH[family])
    for i in range(len(ref.blocks)):
        for name, rule in BLOCK_RULES[family].items():
            _load(ref, f"blocks.{i}.{name}", rule, f"{LAYERS_PATH[family]}.{i}.", hf)
    ref.train(model.training)
    for block, hf_block in zip(ref.blocks, layers, strict=True):
        block.train(hf_block.training)
    ref.frozen_prefix = frozen_prefix
    ref.embeddings_train = embeddings_train
    return ref
