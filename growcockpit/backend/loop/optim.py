"""Optimizer over exactly the trainable set; the LR across stages is plan/schedule.py's.

The optimizer is rebuilt at every stage change (the prts
reimplementation built it once, so appended layers never trained).
"""

from __future__ import annotations

import torch
from torch import nn

from growcockpit.backend.loop.lamb import Lamb
from growcockpit.plan.schedule import lr_at as lr_at
from growcockpit.plan.types import OptimSpec

# AdamW's single-kernel update over all tensors (`fused=True`) exists on these devices; on a
# CPU it replaces the per-tensor Python loop (about 13 operators per tensor per step) and
# skips a non-finite step without a host read, as on CUDA
FUSED_ADAMW_DEVICES = ("cuda", "cpu")


def build_optimizer(
    model: nn.Module, spec: OptimSpec, lr: float, fused: bool = False
) -> torch.optim.Optimizer:
    """AdamW or LAMB, with no weight decay on biases and LayerNorm weights.

    `fused` (the engine sets it on CUDA and the CPU): AdamW's single-kernel update, which
    also skips a non-finite step on the device (backend/loop/step.py). LAMB is
    always multi-tensor (`torch._foreach_*`) and skips on the device too.
    """
    decay, no_decay = trainable_groups(model)
    groups = [
        {"params": decay, "weight_decay": spec.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    groups = [g for g in groups if g["params"]]
    if not groups:
        groups = [{"params": [torch.nn.Parameter(torch.zeros(1))], "weight_decay": 0.0}]
    if spec.name == "adamw":
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.98), eps=1e-6, fused=fused or None)
    if spec.name == "lamb":
        return Lamb(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6)
    raise ValueError(f'optim.name = "{spec.name}" is unknown; use "adamw" or "lamb"')


def trainable_groups(model: nn.Module) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """(decayed, not decayed) trainable parameters, in the order the optimizer holds them
    (a checkpoint's optimizer state is checked against it before it is loaded)."""
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 or "LayerNorm" in name or ".ln_" in name else decay).append(p)
    return decay, no_decay


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def supports_found_inf(optimizer: torch.optim.Optimizer) -> bool:
    """Optimizers that take a device-side `found_inf` flag and skip the update on it."""
    return bool(getattr(optimizer, "_step_supports_amp_scaling", False))


def guarded_step(optimizer: torch.optim.Optimizer, ok: torch.Tensor) -> None:
    """`optimizer.step()` unless `ok` is False; on the device when the optimizer allows."""
    if supports_found_inf(optimizer):
        optimizer.found_inf = (~ok).float().reshape(())  # type: ignore[attr-defined]
        try:
            optimizer.step()
        finally:
            del optimizer.found_inf  # type: ignore[attr-defined]
        return
    if bool(ok):
        optimizer.step()
