"""The cockpit's LR factor, applied inside the optimizer's step where no loop can undo it.

A loop that sets its own LR every iteration (nanoGPT: `for g in optimizer.param_groups:
g["lr"] = get_lr(it)`) overwrites any scale written into the groups between two steps,
so `set_lr` used to be accepted and then silently undone. Here a step pre-hook multiplies
each group's LR by the factor for the duration of `optimizer.step()` and the post-hook puts
the loop's own value back: the update uses the scaled LR whatever the loop or its
scheduler wrote, and the loop's schedule (which may read `group["lr"]`, as chained torch
schedulers do) never sees the factor. The LR actually used is kept for the step event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils.hooks import RemovableHandle

from growcockpit.tracking.layer_probe import inner_optimizer

NO_OPTIMIZER = (
    "no optimizer to apply it to: pass optimizer= to growcockpit.track (a torch.optim "
    "optimizer), so the cockpit scales its LR at each step"
)


class LrFactorHook:
    """Scales every group's LR by `factor()` during each optimizer step; `used` is the
    first group's LR in the last step (None before the first)."""

    def __init__(self, optimizer: Any, factor: Callable[[], float]) -> None:
        self.factor = factor
        self.used: float | None = None
        self._saved: list[Any] = []
        self._handles: list[RemovableHandle] = []
        opt = inner_optimizer(optimizer) if optimizer is not None else None
        self.optimizer: torch.optim.Optimizer | None = (
            opt if isinstance(opt, torch.optim.Optimizer) else None
        )
        if self.optimizer is not None:
            self._handles = [
                self.optimizer.register_step_pre_hook(self._before),
                self.optimizer.register_step_post_hook(self._after),
            ]

    @property
    def hooked(self) -> bool:
        return self.optimizer is not None

    def _before(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        factor = self.factor()
        groups = opt.param_groups
        if factor == 1.0:
            self._saved = []
            self.used = float(groups[0]["lr"]) if groups else None
            return
        self._saved = [group["lr"] for group in groups]
        for group, lr in zip(groups, self._saved, strict=True):
            group["lr"] = lr * factor
        self.used = float(groups[0]["lr"]) if groups else None

    def _after(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        for group, lr in zip(opt.param_groups, self._saved, strict=False):
            group["lr"] = lr  # the loop's own value: its schedule goes on unscaled
        self._saved = []

    def current(self) -> float:
        """The LR the next step uses: the first group's, scaled (0 without an optimizer)."""
        opt = self.optimizer
        if opt is None or not opt.param_groups:
            return 0.0
        return float(opt.param_groups[0]["lr"]) * self.factor()

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
