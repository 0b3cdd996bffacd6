"""Validation losses of the whole model: the periodic eval and an operator's loss probe."""

from __future__ import annotations

import contextlib
import math

import torch
from torch import nn

from growcockpit.backend.data.blocks import Batch
from growcockpit.backend.loop.forward import StagedForward
from growcockpit.grow import set_train_modes
from growcockpit.protocol.events import Eval


@torch.no_grad()
def mean_val_loss(
    model: nn.Module,
    batches: list[Batch],
    device: torch.device,
    autocast: contextlib.AbstractContextManager[None],
) -> float | None:
    """Mean full-model loss over `batches` (None without any); train modes restored after.

    Every layer runs, frozen or not: a stage's score is the whole function's.
    """
    if not batches:
        return None
    was_training = model.training
    model.eval()
    full = StagedForward(0, True)
    with autocast:
        total = sum(full.loss(model, b.to(device)).float() for b in batches)
    if was_training:
        set_train_modes(model)
    return float(total) / len(batches)


def eval_event(
    model: nn.Module,
    batches: list[Batch],
    device: torch.device,
    autocast: contextlib.AbstractContextManager[None],
    step: int,
    stage: int,
) -> Eval | None:
    """The periodic `eval` event: mean validation loss and perplexity (None without batches)."""
    val = mean_val_loss(model, batches, device, autocast)
    if val is None:
        return None
    return Eval(step=step, stage=stage, val_loss=val, val_ppl=math.exp(min(val, 50.0)))
