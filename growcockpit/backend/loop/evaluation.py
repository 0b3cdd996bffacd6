"""Validation losses of the whole model: the periodic eval (with exact-match accuracy) and
an operator's loss probe."""

from __future__ import annotations

import contextlib
import math

import torch
import torch.nn.functional as F
from torch import nn

from growcockpit.backend.data.blocks import Batch, TokenBlocks
from growcockpit.backend.loop.forward import StagedForward
from growcockpit.families import spec_of
from growcockpit.grow import set_train_modes
from growcockpit.plan.types import Plan
from growcockpit.protocol.events import Eval, ModelLoaded


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


def scored_rows(
    model: nn.Module, h: torch.Tensor, labels: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits, targets) at every labelled position, aligned as the family's loss aligns them:
    a causal model's position t is scored against label t + 1 (the loss's shift), a masked
    model's position t against label t. One head pass serves both the loss and the hits."""
    family = spec_of(model)
    if family.facts.objective == "causal":
        h, labels = h[:, :-1], labels[:, 1:]
    mask = labels != -100
    return family.head_logits(model, h[mask]), labels[mask]


def label_scores(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, int, int]:
    """(summed cross-entropy, argmax hits, labelled positions) of scored rows."""
    loss = F.cross_entropy(logits.float(), targets, reduction="sum")
    hits = int((logits.argmax(dim=-1) == targets).sum())
    return loss, hits, int(targets.numel())


@torch.no_grad()
def val_scores(
    model: nn.Module,
    batches: list[Batch],
    device: torch.device,
    autocast: contextlib.AbstractContextManager[None],
) -> tuple[float, float] | None:
    """(mean of the batches' losses, exact-match accuracy) over `batches`: accuracy is the
    fraction of all labelled positions whose argmax is the label (None without any)."""
    if not batches:
        return None
    was_training = model.training
    model.eval()
    full = StagedForward(0, True)
    total, hits, count = 0.0, 0, 0
    with autocast:
        for batch in batches:
            b = batch.to(device)
            logits, targets = scored_rows(model, full.hidden(model, b.input_ids), b.labels)
            loss, h, n = label_scores(logits, targets)
            total += float(loss) / max(n, 1)  # each batch's mean, as the training loss takes it
            hits, count = hits + h, count + n
    if was_training:
        set_train_modes(model)
    if count == 0:
        return None
    return total / len(batches), hits / count


def eval_event(
    model: nn.Module,
    batches: list[Batch],
    device: torch.device,
    autocast: contextlib.AbstractContextManager[None],
    step: int,
    stage: int,
) -> Eval | None:
    """The periodic `eval` event: validation loss, perplexity and exact-match accuracy
    (next-token top-1 on text, the task's answer on `task:` sources); None without batches."""
    scores = val_scores(model, batches, device, autocast)
    if scores is None:
        return None
    val, accuracy = scores
    return Eval(
        step=step,
        stage=stage,
        val_loss=val,
        val_ppl=math.exp(min(val, 50.0)),
        accuracy=accuracy,
    )


def loaded_event(
    plan: Plan, model: nn.Module, data: TokenBlocks, device: torch.device
) -> ModelLoaded:
    """What `init_from` loaded, with the loss of the first validation batch before any step."""
    path = plan.model.init_from or ""
    batches = data.val_batches(plan.optim.batch_size, 1)
    val = mean_val_loss(model, batches, device, contextlib.nullcontext())
    return ModelLoaded(
        path=path,
        family=plan.model.family,
        layers=plan.stages[0].layers,
        parameters=sum(p.numel() for p in model.parameters()),
        val_loss=val,
    )
