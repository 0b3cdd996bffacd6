"""Building a BERT masked-LM or GPT-2 causal-LM from a plan, with no download."""

from __future__ import annotations

from typing import Any

from torch import nn
from transformers import (
    BertConfig,
    BertForMaskedLM,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerBase,
)

from growcockpit.plan.types import ModelSpec


def build_model(spec: ModelSpec, layers: int, tokenizer: PreTrainedTokenizerBase) -> nn.Module:
    """A freshly initialised model of `layers` blocks at the plan's full width.

    Attention is SDPA: the staged forward calls blocks without a mask and
    relies on SDPA's `is_causal` for GPT-2 (eager attention would not be causal).
    """
    vocab = len(tokenizer)
    if spec.family == "bert":
        config = BertConfig(
            vocab_size=vocab,
            hidden_size=spec.hidden_size,
            num_hidden_layers=layers,
            num_attention_heads=spec.num_heads,
            intermediate_size=spec.intermediate_size,
            max_position_embeddings=spec.max_seq_len,
            hidden_dropout_prob=spec.dropout,
            attention_probs_dropout_prob=spec.dropout,
            pad_token_id=tokenizer.pad_token_id,
            type_vocab_size=2,
        )
        config._attn_implementation = "sdpa"
        return BertForMaskedLM(config)
    eos = tokenizer.eos_token_id
    config2 = GPT2Config(
        vocab_size=vocab,
        n_embd=spec.hidden_size,
        n_layer=layers,
        n_head=spec.num_heads,
        n_inner=spec.intermediate_size,
        n_positions=spec.max_seq_len,
        resid_pdrop=spec.dropout,
        embd_pdrop=spec.dropout,
        attn_pdrop=spec.dropout,
        bos_token_id=eos,
        eos_token_id=eos,
    )
    config2._attn_implementation = "sdpa"
    return GPT2LMHeadModel(config2)


def model_from_saved(
    model_type: type[nn.Module], config_type: Any, config: dict[str, Any], state: dict[str, Any]
) -> nn.Module:
    """A model rebuilt from a checkpoint's config dict and weights, with SDPA attention as
    `build_model` gives it (checkpoints and V-cycle level snapshots)."""
    cfg = config_type.from_dict(config)
    cfg._attn_implementation = "sdpa"
    model = model_type(cfg)
    model.load_state_dict(state)
    return model
