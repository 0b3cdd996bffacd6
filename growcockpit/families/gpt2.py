"""GPT-2 causal-LM: pre-LN decoder blocks (Conv1D weights stored in × out), a tied LM head."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel, PretrainedConfig, PreTrainedTokenizerBase

from growcockpit.families.fast_blocks import BlockForward, gpt2_block_forward
from growcockpit.families.spec import Axis, FamilySpec, ModelShape, TensorRule, _part
from growcockpit.plan.types import ModelSpec

_H: tuple[Axis, ...] = ((0, "h", "row"),)
_EMB = TensorRule(((1, "h", "row"),), "embedding")
# GPT-2's tanh GELU as one fused kernel (`F.gelu(approximate="tanh")`); HF's default
# "gelu_new" computes the same function in eight eager kernels forward and more backward
# (bench/step_vs_reference.py counts them). Models loaded with `init_from` keep theirs.
FUSED_GELU = "gelu_pytorch_tanh"


def causal_lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy: position t predicts token t + 1 (`logits` are for 0..T-2)."""
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))


class CausalLMSpec(FamilySpec):
    """A decoder whose head is a final norm then `lm_head`, trained on the next token."""

    final_norm: ClassVar[str]

    def head_modules(self, model: nn.Module) -> list[nn.Module]:
        return [_part(model, self.final_norm), _part(model, "lm_head")]

    def head_loss(
        self,
        model: nn.Module,
        h: torch.Tensor,
        labels: torch.Tensor,
        picked: torch.Tensor | None,
    ) -> torch.Tensor:
        h = _part(model, self.final_norm)(h)
        return causal_lm_loss(_part(model, "lm_head")(h[:, :-1]), labels)

    def head_logits(self, model: nn.Module, h: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = _part(model, "lm_head")(_part(model, self.final_norm)(h))
        return logits


class GPT2Spec(CausalLMSpec):
    name = "gpt2"
    model_class = GPT2LMHeadModel
    config_class = GPT2Config
    layers_path = "transformer.h"
    final_norm = "transformer.ln_f"
    depth_keys = ("n_layer", "num_hidden_layers")
    dropout_keys = ("resid_pdrop", "embd_pdrop", "attn_pdrop")
    residual_outputs = ("attn.c_proj", "mlp.c_proj")
    tensor_rules = (
        (r"transformer\.(wte|wpe)\.weight", _EMB),
        (r"lm_head\.weight", _EMB),  # tied to wte
        (r"transformer\.ln_f\.(weight|bias)", TensorRule(_H, "ln_f")),
        (r".*\.ln_[12]\.(weight|bias)", TensorRule(_H)),
        (r".*attn\.c_attn\.weight", TensorRule(((0, "h", "col"), (1, "qkv", "row")))),
        (r".*attn\.c_attn\.bias", TensorRule(((0, "qkv", "row"),))),
        (r".*attn\.c_proj\.weight", TensorRule(((0, "h", "col"), (1, "h", "row")))),
        (r".*mlp\.c_fc\.weight", TensorRule(((0, "h", "col"), (1, "ffn", "row")))),
        (r".*mlp\.c_fc\.bias", TensorRule(((0, "ffn", "row"),))),
        (r".*mlp\.c_proj\.weight", TensorRule(((0, "ffn", "col"), (1, "h", "row")))),
        (r".*\.c_proj\.bias", TensorRule(_H)),
    )

    def config(
        self, spec: ModelSpec, layers: int, tokenizer: PreTrainedTokenizerBase
    ) -> PretrainedConfig:
        eos = tokenizer.eos_token_id
        return GPT2Config(
            vocab_size=len(tokenizer),
            n_embd=spec.hidden_size,
            n_layer=layers,
            n_head=spec.num_heads,
            n_inner=spec.intermediate_size,
            n_positions=spec.max_seq_len,
            resid_pdrop=spec.dropout,
            embd_pdrop=spec.dropout,
            attn_pdrop=spec.dropout,
            activation_function=FUSED_GELU,
            bos_token_id=eos,
            eos_token_id=eos,
        )

    def fresh_block(self, model: nn.Module, idx: int) -> nn.Module:
        from transformers.models.gpt2.modeling_gpt2 import GPT2Block

        block: nn.Module = GPT2Block(_part(model, "config"), layer_idx=idx)  # type: ignore[no-untyped-call]
        return block

    def fast_forward(self) -> BlockForward:
        return gpt2_block_forward

    def embedding_modules(self, model: nn.Module) -> list[nn.Module]:
        """Token and position tables and the dropout after them; `lm_head` is tied to `wte`."""
        return [
            _part(model, "transformer.wte"),
            _part(model, "transformer.wpe"),
            _part(model, "transformer.drop"),
        ]

    def embed(self, model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
        tr = _part(model, "transformer")
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        emb: torch.Tensor = tr.drop(tr.wte(ids) + tr.wpe(pos))
        return emb

    def shape(self, config: Any) -> ModelShape:
        ffn = config.n_inner if config.n_inner is not None else 4 * config.n_embd
        return ModelShape(int(config.n_embd), int(config.n_head), int(ffn), int(config.n_layer))

    def with_shape(self, config: Any, shape: ModelShape) -> None:
        inner = config.n_inner
        config.n_embd = shape.hidden
        config.n_head = shape.heads
        if inner is not None or shape.ffn != 4 * shape.hidden:
            config.n_inner = shape.ffn
        config.n_layer = shape.layers
