"""What a tracked loop can do with a control command, and why it refuses the rest.

A loop growcockpit only watches can stop at a step boundary (pause, stop), change its
optimizer's learning rates (set_lr) and save itself (checkpoint). It has no plan of
stages to advance or edit, and cannot rewind the user's data loader and code to a
checkpoint, so those commands are refused with the reason and what to do instead.
"""

from __future__ import annotations

from typing import Any, Literal

import torch

Honoured = Literal["pause", "resume", "set_lr", "checkpoint", "stop"]
HONOURED: tuple[Honoured, ...] = ("pause", "resume", "set_lr", "checkpoint", "stop")

REFUSALS: dict[str, str] = {
    "advance": (
        "a tracked loop has no stages to advance: grow a Trainer run with "
        "growcockpit.GrowthCallback, or train the plan with growcockpit train"
    ),
    "edit_stages": (
        "a tracked loop runs your own code, not a plan: there are no stages to edit "
        "(GrowthCallback's plan is fixed at launch)"
    ),
    "rollback": (
        "a tracked loop cannot rewind your data loader and code to a checkpoint: "
        "stop it and restart your script from its checkpoint"
    ),
}


def refusal(command: str) -> str:
    return REFUSALS.get(command, f"unknown command {command!r}")


def scale_lr(optimizer: torch.optim.Optimizer, scheduler: Any, factor: float) -> None:
    """Multiply every group's LR by `factor`, and the schedule's base LRs with it.

    A torch scheduler recomputes each group's LR from its `base_lrs` at every step, so
    scaling only the groups would last one step; scaling the bases (and `initial_lr`,
    from which a rebuilt scheduler starts) makes the schedule go on from the new scale.
    """
    scheduler = getattr(scheduler, "scheduler", scheduler)  # accelerate's wrapper holds one
    for group in optimizer.param_groups:
        group["lr"] = group["lr"] * factor
        if "initial_lr" in group:
            group["initial_lr"] = group["initial_lr"] * factor
    bases = getattr(scheduler, "base_lrs", None)
    if isinstance(bases, list):
        scheduler.base_lrs = [base * factor for base in bases]
    last = getattr(scheduler, "_last_lr", None)
    if isinstance(last, list):
        scheduler._last_lr = [group["lr"] for group in optimizer.param_groups]
