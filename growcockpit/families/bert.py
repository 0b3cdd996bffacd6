"""BERT masked-LM: post-LN encoder blocks, a tied MLM decoder, logits at masked positions only."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertConfig, BertForMaskedLM, PretrainedConfig, PreTrainedTokenizerBase

from growcockpit.families.fast_blocks import BlockForward, bert_block_forward
from growcockpit.families.spec import Axis, FamilySpec, ModelShape, TensorRule, _part
from growcockpit.plan.types import ModelSpec

_H: tuple[Axis, ...] = ((0, "h", "row"),)
_LIN_HH: tuple[Axis, ...] = ((0, "h", "row"), (1, "h", "col"))
_EMB = TensorRule(((1, "h", "row"),), "embedding")
_KEEP = TensorRule(())


class BertSpec(FamilySpec):
    name = "bert"
    model_class = BertForMaskedLM
    config_class = BertConfig
    layers_path = "bert.encoder.layer"
    depth_keys = ("num_hidden_layers",)
    dropout_keys = ("hidden_dropout_prob", "attention_probs_dropout_prob")
    tensor_rules = (
        (r"bert\.embeddings\.(word|position|token_type)_embeddings\.weight", _EMB),
        (r"cls\.predictions\.decoder\.weight", _EMB),  # tied to the word table
        (r"cls\.predictions\.(decoder\.)?bias", _KEEP),  # vocabulary-sized
        (r".*LayerNorm\.(weight|bias)", TensorRule(_H)),
        (r".*attention\.self\.(query|key|value)\.weight", TensorRule(_LIN_HH)),
        (r".*attention\.output\.dense\.weight", TensorRule(_LIN_HH)),
        (r".*intermediate\.dense\.weight", TensorRule(((0, "ffn", "row"), (1, "h", "col")))),
        (r".*intermediate\.dense\.bias", TensorRule(((0, "ffn", "row"),))),
        (r".*layer\.\d+\.output\.dense\.weight", TensorRule(((0, "h", "row"), (1, "ffn", "col")))),
        (r"cls\.predictions\.transform\.dense\.weight", TensorRule(_LIN_HH)),
        (r".*\.bias", TensorRule(_H)),  # query/key/value/dense biases on the hidden axis
    )

    def config(
        self, spec: ModelSpec, layers: int, tokenizer: PreTrainedTokenizerBase
    ) -> PretrainedConfig:
        return BertConfig(
            vocab_size=len(tokenizer),
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

    def fresh_block(self, model: nn.Module, idx: int) -> nn.Module:
        from transformers.models.bert.modeling_bert import BertLayer

        block: nn.Module = BertLayer(_part(model, "config"), layer_idx=idx)  # type: ignore[no-untyped-call]
        return block

    def fast_forward(self) -> BlockForward:
        return bert_block_forward

    def embedding_modules(self, model: nn.Module) -> list[nn.Module]:
        """The embedding module (token, position, token-type tables, their LayerNorm and
        dropout); the MLM decoder weight is tied to the token table, so freezing these
        freezes the decoder matrix too (what MSLT wants)."""
        return [_part(model, "bert.embeddings")]

    def head_modules(self, model: nn.Module) -> list[nn.Module]:
        return [_part(model, "cls")]

    def embed(self, model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = _part(model, "bert.embeddings")(input_ids=ids)
        return out

    def head_loss(
        self,
        model: nn.Module,
        h: torch.Tensor,
        labels: torch.Tensor,
        picked: torch.Tensor | None,
    ) -> torch.Tensor:
        """Logits only at masked positions (same loss, a fraction of the head's cost)."""
        if picked is not None:
            rows = h.reshape(-1, h.shape[-1]).index_select(0, picked)
            targets = labels.reshape(-1).index_select(0, picked)
        else:
            mask = labels != -100
            rows, targets = h[mask], labels[mask]
        logits = _part(model, "cls")(rows)
        return F.cross_entropy(logits.float(), targets)

    def head_logits(self, model: nn.Module, h: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = _part(model, "cls")(h)
        return logits

    def shape(self, config: Any) -> ModelShape:
        return ModelShape(
            int(config.hidden_size),
            int(config.num_attention_heads),
            int(config.intermediate_size),
            int(config.num_hidden_layers),
        )

    def with_shape(self, config: Any, shape: ModelShape) -> None:
        config.hidden_size = shape.hidden
        config.num_attention_heads = shape.heads
        config.intermediate_size = shape.ffn
        config.num_hidden_layers = shape.layers
