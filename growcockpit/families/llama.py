"""Llama-style causal-LM: pre-norm RMSNorm blocks, rotary positions, SwiGLU MLP,
grouped-query attention, no biases, an untied LM head by default.

Blocks need the rotary `position_embeddings` (cos, sin) passed in: `block_call`
computes them once per forward from the model's own rotary module. Identity
blocks (LLaMA Pro) zero `o_proj` and `down_proj`. Width coalescing pairs query
head i with i + n_h/2 and kv head j with j + n_kv/2, keeping the head
dimension, so RoPE (a rotation within each head) commutes with it and every
query head's kv group maps onto the coalesced kv head.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM, PretrainedConfig, PreTrainedTokenizerBase

from growcockpit.families.fast_blocks import BlockForward, llama_block_forward
from growcockpit.families.gpt2 import CausalLMSpec
from growcockpit.families.spec import Axis, BlockCall, ModelShape, TensorRule, _part
from growcockpit.plan.types import ModelSpec

_H: tuple[Axis, ...] = ((0, "h", "row"),)


def _rotary_call(
    block: nn.Module, h: torch.Tensor, *, position_embeddings: tuple[torch.Tensor, torch.Tensor]
) -> torch.Tensor:
    out: torch.Tensor = block(h, position_embeddings=position_embeddings)
    return out


class LlamaSpec(CausalLMSpec):
    name = "llama"
    model_class = LlamaForCausalLM
    config_class = LlamaConfig
    layers_path = "model.layers"
    final_norm = "model.norm"
    depth_keys = ("num_hidden_layers",)
    dropout_keys = ("attention_dropout",)
    residual_outputs = ("self_attn.o_proj", "mlp.down_proj")
    # weights are out × in (nn.Linear); D copies rows and splits columns, C the inverse.
    # The untied head's columns are split like any input side (rows are the vocabulary),
    # and the token table is copied unscaled: RMSNorm sees the same mean square.
    tensor_rules = (
        (r"model\.embed_tokens\.weight", TensorRule(((1, "h", "row"),))),
        (r"lm_head\.weight", TensorRule(((1, "h", "col"),))),
        (r"model\.norm\.weight", TensorRule(_H)),
        (r".*\.(input|post_attention)_layernorm\.weight", TensorRule(_H)),
        (r".*self_attn\.q_proj\.weight", TensorRule(((0, "h", "row"), (1, "h", "col")))),
        (r".*self_attn\.[kv]_proj\.weight", TensorRule(((0, "kv", "row"), (1, "h", "col")))),
        (r".*self_attn\.o_proj\.weight", TensorRule(((0, "h", "row"), (1, "h", "col")))),
        (r".*mlp\.(gate|up)_proj\.weight", TensorRule(((0, "ffn", "row"), (1, "h", "col")))),
        (r".*mlp\.down_proj\.weight", TensorRule(((0, "h", "row"), (1, "ffn", "col")))),
    )

    def config(
        self, spec: ModelSpec, layers: int, tokenizer: PreTrainedTokenizerBase
    ) -> PretrainedConfig:
        eos = tokenizer.eos_token_id
        return LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=spec.hidden_size,
            intermediate_size=spec.intermediate_size,
            num_hidden_layers=layers,
            num_attention_heads=spec.num_heads,
            num_key_value_heads=spec.kv_heads,
            head_dim=spec.hidden_size // spec.num_heads,
            max_position_embeddings=spec.max_seq_len,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": float(spec.family_value("rope_theta")),  # type: ignore[arg-type]
            },
            rms_norm_eps=float(spec.family_value("rms_norm_eps")),  # type: ignore[arg-type]
            tie_word_embeddings=bool(spec.family_value("tie_embeddings")),
            attention_dropout=spec.dropout,
            bos_token_id=eos,
            eos_token_id=eos,
            pad_token_id=getattr(tokenizer, "pad_token_id", None),
        )

    def fresh_block(self, model: nn.Module, idx: int) -> nn.Module:
        from transformers.models.llama.modeling_llama import LlamaDecoderLayer

        block: nn.Module = LlamaDecoderLayer(_part(model, "config"), layer_idx=idx)
        return block

    def fast_forward(self) -> BlockForward:
        return llama_block_forward

    def embedding_modules(self, model: nn.Module) -> list[nn.Module]:
        """The token table (the rotary module has no weights); with tied embeddings
        `lm_head` shares it."""
        return [_part(model, "model.embed_tokens")]

    def embed(self, model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = _part(model, "model.embed_tokens")(ids)
        return out

    def block_call(self, model: nn.Module, h: torch.Tensor) -> BlockCall:
        positions = torch.arange(h.shape[1], device=h.device).unsqueeze(0)
        cos_sin = _part(model, "model.rotary_emb")(h, position_ids=positions)
        return functools.partial(_rotary_call, position_embeddings=cos_sin)

    def width_problem(self, model: nn.Module) -> str:
        """Tied embeddings: the one token table would get the head's rule (columns split)
        as well as its own, and the logits change (by up to 4.9 on a tiny model)."""
        if getattr(_part(model, "config"), "tie_word_embeddings", False):
            return (
                "width coalesce / de-coalesce of a llama with tied embeddings "
                "(tie_word_embeddings = true) would change its function: the shared token "
                "table cannot take both the embedding's and the head's width rule; "
                "grow it in depth, or untie the embeddings first"
            )
        return ""

    def shape(self, config: Any) -> ModelShape:
        return ModelShape(
            int(config.hidden_size),
            int(config.num_attention_heads),
            int(config.intermediate_size),
            int(config.num_hidden_layers),
            int(config.num_key_value_heads),
        )

    def with_shape(self, config: Any, shape: ModelShape) -> None:
        """A head_dim other than hidden / heads (some checkpoints have one) is kept when
        the width stays; width operators pair heads of hidden / heads coordinates, so a
        change of width is refused naming head_dim rather than failing on a tensor axis."""
        natural = config.hidden_size // config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or natural
        same_width = (shape.hidden, shape.heads) == (config.hidden_size, config.num_attention_heads)
        if head_dim != natural and not same_width:
            raise ValueError(
                f"head_dim = {head_dim} is not hidden_size / num_attention_heads = "
                f"{config.hidden_size} / {config.num_attention_heads} = {natural}: width "
                "operators (coalesce, de-coalesce, widen) need head_dim = hidden / heads; "
                "depth operators work on this model"
            )
        config.hidden_size = shape.hidden
        config.num_attention_heads = shape.heads
        config.num_key_value_heads = shape.kv
        config.head_dim = head_dim if same_width else shape.head_dim
        config.intermediate_size = shape.ffn
        config.num_hidden_layers = shape.layers
