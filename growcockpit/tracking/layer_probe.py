"""Per-layer gradient norms, update ratios and fwd/bwd times of a loop growcockpit does not run.

The loop is someone else's, so everything comes from hooks: the optimizer's step pre-
and post-hooks bracket the update (grad norms and the weight snapshot before it, the
update ratio after it, as `LayerStatsSampler` wants), and the block hooks of
`LayerTimer` time the forward and backward of the step before. Nothing is hooked
between sampled steps: the timer's hooks are attached for one step and removed, and
the optimizer hooks return at once, so the cost falls on the sampled steps alone.

The gradients are read as the optimizer sees them, i.e. after any clipping the loop does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from growcockpit.metrics import LayerStatsSampler, LayerTimer
from growcockpit.protocol.events import LayerStat


def inner_optimizer(optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
    """The torch optimizer itself (accelerate's `AcceleratedOptimizer` wraps one)."""
    inner = getattr(optimizer, "optimizer", None)
    return inner if isinstance(inner, torch.optim.Optimizer) else optimizer


class LayerProbe:
    """`arm(step)` before a step's forward; after its optimizer step, `take()` the stats."""

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        blocks: Sequence[nn.Module] | None,
        device: torch.device,
        every_steps: int,
        timing_every_steps: int,
    ) -> None:
        self.sampler = LayerStatsSampler(model, blocks)
        self.timer = LayerTimer(device)
        self.every_steps = every_steps
        self.timing_every_steps = timing_every_steps
        self._sampling = False
        self._timing = False
        self._backward_marked = False
        self._grads: list[float | None] = []
        self._ready: list[LayerStat] | None = None
        self._bottom: RemovableHandle | None = None
        opt = inner_optimizer(optimizer)
        self._handles = [
            opt.register_step_pre_hook(self._before_update),
            opt.register_step_post_hook(self._after_update),
        ]

    @staticmethod
    def _due(step: int, every: int) -> bool:
        return every > 0 and step % every == 0

    def arm(self, step: int) -> None:
        """Prepare for step `step` (1-based): sample it, time it, or leave it alone.

        Arming again (after an operator changed the blocks) replaces the earlier hooks."""
        self._unhook_timer()
        self._timing = self._due(step, self.timing_every_steps)
        self._sampling = self._due(step, self.every_steps) or self._timing
        if not self._timing:
            return
        blocks = nn.ModuleList(list(self.sampler.layers()))
        self.timer.attach(blocks)
        self._backward_marked = False
        if len(blocks):
            self._bottom = blocks[0].register_full_backward_hook(self._backward_end)

    def _backward_end(self, *_: Any) -> None:
        self.timer.backward_done()
        self._backward_marked = True

    def _before_update(self, *_: Any) -> None:
        if not self._sampling:
            return
        if self._timing and not self._backward_marked:  # the bottom block had no backward
            self._backward_end()
        self._grads = self.sampler.before_update()

    def _after_update(self, *_: Any) -> None:
        if not self._sampling:
            return
        self._sampling = False
        fwd: list[float | None] | None = None
        bwd: list[float | None] | None = None
        if self._timing:
            fwd, bwd = self.timer.result()
            self._unhook_timer()
        self._ready = self.sampler.collect(self._grads, fwd, bwd)

    def _unhook_timer(self) -> None:
        self._timing = False
        self.timer.detach()
        if self._bottom is not None:
            self._bottom.remove()
            self._bottom = None

    def take(self) -> list[LayerStat] | None:
        """The stats of the step just ended, if it was sampled (then cleared)."""
        out, self._ready = self._ready, None
        if self._timing:  # armed, but no optimizer step came (a skipped fp16 step)
            self._unhook_timer()
        self._sampling = False
        return out

    def close(self) -> None:
        self._unhook_timer()
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
