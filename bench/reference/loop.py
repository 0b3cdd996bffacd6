"""The reference training step, nanoGPT's loop: forward, backward, clip, AdamW, zero_grad.

The same optimizer as the product's (`build_optimizer`'s AdamW: betas 0.9/0.98,
eps 1e-6, no decay on 1-D tensors, fused exactly where the product's is), the same
gradient clip and the same autocast; nothing else. No host read, no finiteness guard, no metrics.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch

from growcockpit.backend.data.blocks import Batch
from reference.model import ReferenceModel


def reference_optimizer(
    model: ReferenceModel, lr: float, weight_decay: float, fused: bool | None
) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(
        [g for g in groups if g["params"]], lr=lr, betas=(0.9, 0.98), eps=1e-6, fused=fused
    )


def reference_step(
    loss_fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None], torch.Tensor],
    optimizer: torch.optim.Optimizer,
    batches: list[Batch],
    autocast: Callable[[], contextlib.AbstractContextManager[None]],
    grad_clip: float,
) -> Callable[[], None]:
    """nanoGPT's step over `loss_fn(ids, labels, picked)`, cycling through `batches` (already
    on the device): the reference model's loss, or the product's own loss module alone."""
    params = [p for g in optimizer.param_groups for p in g["params"]]
    state = {"i": 0}

    def step() -> None:
        batch = batches[state["i"] % len(batches)]
        state["i"] += 1
        with autocast():
            loss = loss_fn(batch.input_ids, batch.labels, batch.picked)
        loss.backward()  # type: ignore[no-untyped-call]
        if grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(params, grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step
