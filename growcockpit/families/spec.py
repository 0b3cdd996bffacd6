"""The torch half of a model family: everything that differs between BERT, GPT-2, …

Growth operators, the staged forward, checkpoints and `init_from` ask a
`FamilySpec` instead of testing a family name, so adding a family is one
module (a subclass) and one registry row (`families/__init__.py`), with the
plan-level facts in `plan/families.py`. The shape of this follows torchtitan's
TrainSpec and litgpt's Config: one object names every variation.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedTokenizerBase

from growcockpit.families.fast_blocks import BlockForward
from growcockpit.plan.families import FamilyFacts, family_facts
from growcockpit.plan.types import ModelSpec
from growcockpit.text.safe_text import quoted

# (dim, axis kind, role): kind "h" residual/head axis, "qkv" GPT-2 fused Q|K|V,
# "ffn" FFN axis, "kv" a grouped-query K/V axis; role "row" = output side /
# vector (F·, T·), "col" = input side (·T, ·F).
Axis = tuple[int, str, str]

# how a block is called inside the staged forward: (block, hidden) → hidden
BlockCall = Callable[[nn.Module, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class TensorRule:
    """How the width maps act on one state-dict tensor (grow/coalesce.py)."""

    axes: tuple[Axis, ...]
    scale: str = ""  # "" none, "embedding" (× c under C), "ln_f" (× ln_f factor under C)


@dataclass(frozen=True)
class ModelShape:
    hidden: int
    heads: int
    ffn: int
    layers: int
    kv_heads: int = 0  # 0: as many as `heads` (no grouped-query attention)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv(self) -> int:
        return self.kv_heads or self.heads


def call_block(block: nn.Module, h: torch.Tensor) -> torch.Tensor:
    out: torch.Tensor = block(h)
    return out


class FamilySpec(ABC):
    """One registered model family. Subclasses set the class attributes and
    implement the methods; nothing outside `growcockpit/families` tests a
    family's name."""

    name: ClassVar[str]
    model_class: ClassVar[type[nn.Module]]
    config_class: ClassVar[type[PretrainedConfig]]
    layers_path: ClassVar[str]  # dotted path of the ModuleList of blocks
    depth_keys: ClassVar[tuple[str, ...]]  # config fields that hold the depth
    dropout_keys: ClassVar[tuple[str, ...]]  # config fields the plan's dropout sets
    tensor_rules: ClassVar[Sequence[tuple[str, TensorRule]]]
    residual_outputs: ClassVar[tuple[str, ...]] = ()  # zeroed by init = "zero"

    @property
    def facts(self) -> FamilyFacts:
        return family_facts(self.name)

    # building ---------------------------------------------------------------
    @abstractmethod
    def config(
        self, spec: ModelSpec, layers: int, tokenizer: PreTrainedTokenizerBase
    ) -> PretrainedConfig:
        """The transformers config of a fresh model of `layers` blocks at full width."""

    def build(self, spec: ModelSpec, layers: int, tokenizer: PreTrainedTokenizerBase) -> nn.Module:
        config = self.config(spec, layers, tokenizer)
        config._attn_implementation = "sdpa"
        return self.model_class(config)

    @abstractmethod
    def fresh_block(self, model: nn.Module, idx: int) -> nn.Module:
        """A newly initialised block for `model` (stack source = "random")."""

    # parts ------------------------------------------------------------------
    @abstractmethod
    def embedding_modules(self, model: nn.Module) -> list[nn.Module]:
        """Input embeddings (and what runs between them and block 0)."""

    @abstractmethod
    def head_modules(self, model: nn.Module) -> list[nn.Module]:
        """What runs after the last block (final norm, LM/MLM head)."""

    # the staged forward ------------------------------------------------------
    @abstractmethod
    def embed(self, model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
        """Token ids → the hidden state block 0 takes (dropout included)."""

    def block_call(self, model: nn.Module, h: torch.Tensor) -> BlockCall:
        """How each block is called for a hidden state shaped like `h` (Llama
        passes its rotary embeddings; the others call the block plainly)."""
        return call_block

    def fast_forward(self) -> BlockForward | None:
        """The block forward the staged forward trains with in place of HF's (the same
        arithmetic over the block's own weights, fused projections: families/fast_blocks.py),
        or None: the HF block's own forward."""
        return None

    @abstractmethod
    def head_loss(
        self,
        model: nn.Module,
        h: torch.Tensor,
        labels: torch.Tensor,
        picked: torch.Tensor | None,
    ) -> torch.Tensor:
        """The objective's loss from the last block's output."""

    @abstractmethod
    def head_logits(self, model: nn.Module, h: torch.Tensor) -> torch.Tensor:
        """Logits over the vocabulary at every position of the last block's output
        (what samples are drawn from; the loss path computes only the positions it needs)."""

    # growth -------------------------------------------------------------------
    @torch.no_grad()
    def zero_residual_outputs(self, block: nn.Module) -> None:
        """Zero the block's residual-output projections: a pre-norm block then adds nothing."""
        if not self.facts.identity_init:
            raise ValueError(identity_init_refusal(self.name))
        for path in self.residual_outputs:
            proj = _part(block, path)
            proj.weight.zero_()
            if getattr(proj, "bias", None) is not None:
                proj.bias.zero_()

    def tensor_rule(self, name: str) -> TensorRule:
        """How the width maps act on state-dict tensor `name` (fails loudly if unknown)."""
        for pattern, rule in self.tensor_rules:
            if re.fullmatch(pattern, name):
                return rule
        raise ValueError(
            f"no width rule for {self.name} tensor {quoted(name)}: growcockpit cannot map it"
        )

    def width_problem(self, model: nn.Module) -> str:
        """Why a width coalesce / de-coalesce would not be exact on `model` ("" when it is)."""
        return ""

    @abstractmethod
    def shape(self, config: Any) -> ModelShape:
        """The config's width and depth in plan terms."""

    @abstractmethod
    def with_shape(self, config: Any, shape: ModelShape) -> None:
        """Set `config`'s width and depth fields to `shape`, in place."""

    def set_depth(self, config: Any, layers: int) -> None:
        for key in self.depth_keys:
            setattr(config, key, layers)


def identity_init_refusal(family: str) -> str:
    return (
        f'init="zero" cannot make a {family} block the identity (a post-LN block\'s LayerNorm '
        "follows the residual sum); use ramp_steps (a gated block) instead"
    )


def _part(obj: Any, dotted: str) -> Any:
    for name in dotted.split("."):
        obj = getattr(obj, name)
    return obj
