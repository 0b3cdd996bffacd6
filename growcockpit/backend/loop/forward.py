"""The loss of one batch, with a frozen bottom that does no backward at all.

MSLT's saving comes from never running backward through the frozen layers:
they run under `torch.no_grad()`, their output is detached, and they keep no
activations. This only holds when nothing below them trains (embeddings frozen too); otherwise gradients must flow through
them to reach the input and the whole stack runs with autograd.

Frozen blocks *above* the lowest trainable one (`source = "middle"` with
`train = "new"`) run with autograd: their parameters do not require grad, so
they compute no weight gradient but pass the input gradient down.

Blocks of a family with a fast forward (BERT, Llama: one fused q|k|v and gate|up
matmul over the block's own HF weights, families/fast_blocks.py) run it in place of
HF's forward, installed only for the call: hooks stay, the model stays HF's.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from growcockpit.backend.data.blocks import Batch
from growcockpit.backend.loop.block_compile import BlockCompiler, with_forward
from growcockpit.families import spec_of
from growcockpit.grow.model_parts import get_layers


@dataclass
class StagedForward:
    """Forward plan for a stage: how many bottom blocks run forward-only, and
    which blocks this step skips (`layer_drop`: a skipped block is the identity
    and costs nothing)."""

    frozen_prefix: int
    embeddings_trainable: bool
    skip: frozenset[int] = frozenset()
    compiled: BlockCompiler | None = None  # optim.compile: the blocks' compiled forwards
    fast: bool = True  # the family's fast block forward (families/fast_blocks.py), if it has one

    @classmethod
    def for_stage(
        cls, trainable_layers: list[int], depth: int, embeddings_trainable: bool
    ) -> StagedForward:
        lowest = min(trainable_layers) if trainable_layers else depth
        prefix = 0 if embeddings_trainable else lowest
        return cls(frozen_prefix=prefix, embeddings_trainable=embeddings_trainable)

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        h = self.hidden(model, batch.input_ids)
        return spec_of(model).head_loss(model, h, batch.labels, batch.picked)

    def hidden(self, model: nn.Module, input_ids: torch.Tensor) -> torch.Tensor:
        """The last block's output (before the head): the loss and the evaluation's
        accuracy both read it (backend/loop/evaluation.py)."""
        layers = get_layers(model)
        family = spec_of(model)
        no_grad_bottom = not self.embeddings_trainable
        with torch.set_grad_enabled(torch.is_grad_enabled() and not no_grad_bottom):
            h = family.embed(model, input_ids)
            run = family.block_call(model, h)
            fast = family.fast_forward() if self.fast else None
            if self.compiled is not None:
                run = self.compiled.wrap(run, fast)
            elif fast is not None:
                run = with_forward(run, lambda _: fast)
            for i in range(self.frozen_prefix):
                if i not in self.skip:
                    h = run(layers[i], h)
        if no_grad_bottom:
            h = h.detach()
        for i in range(self.frozen_prefix, len(layers)):
            if i not in self.skip:
                h = run(layers[i], h)
        return h


def head_loss(model: nn.Module, h: torch.Tensor, batch: Batch) -> torch.Tensor:
    """The family's loss from the last block's output (BERT: logits at masked positions only)."""
    return spec_of(model).head_loss(model, h, batch.labels, batch.picked)


class LossModule(nn.Module):
    """The model plus its stage's forward recipe, as one module DDP can wrap.

    DDP only prepares gradient reduction when its own `forward` runs, so the
    staged forward must be called through a module rather than on the side.
    """

    def __init__(self, model: nn.Module, recipe: StagedForward) -> None:
        super().__init__()
        self.model = model
        self.recipe = recipe

    def forward(
        self, input_ids: torch.Tensor, labels: torch.Tensor, picked: torch.Tensor | None = None
    ) -> torch.Tensor:
        return self.recipe.loss(self.model, Batch(input_ids, labels, picked))
