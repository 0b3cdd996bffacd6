"""metrics/timing.py's LayerTimer: which block a backward millisecond belongs to.

A block's backward is timed from the moment its output's gradient is ready to the
same moment of the block below, so a block that is slow backward (here: one that
sleeps in its own backward) must carry that time, and a block that never runs
backward (a frozen bottom under `no_grad`) must read None, not zero.
"""

from __future__ import annotations

import time
from typing import Any

import torch
from torch import nn

from growcockpit.metrics import LayerTimer

SLEEP_S = 0.03


class SlowBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        time.sleep(SLEEP_S)
        return grad


class Block(nn.Module):
    def __init__(self, slow: bool) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.slow = slow

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.lin(x)
        return SlowBackward.apply(y) if self.slow else y  # type: ignore[no-any-return]


def timed_step(blocks: nn.ModuleList, frozen: int) -> tuple[list[float | None], list[float | None]]:
    timer = LayerTimer(torch.device("cpu"))
    timer.attach(blocks)
    h = torch.randn(4, 8)
    with torch.no_grad():
        for block in blocks[:frozen]:
            h = block(h)
    for block in blocks[frozen:]:
        h = block(h)
    h.sum().backward()
    timer.backward_done()
    out = timer.result()
    timer.detach()
    return out


def test_a_slow_backward_is_charged_to_its_own_block() -> None:
    blocks = nn.ModuleList([Block(False), Block(True), Block(False)])
    fwd, bwd = timed_step(blocks, frozen=0)
    assert all(ms is not None and ms >= 0 for ms in fwd)
    assert all(ms is not None for ms in bwd)
    assert bwd[1] is not None and bwd[1] >= SLEEP_S * 1e3 * 0.9
    assert bwd[0] is not None and bwd[2] is not None
    assert bwd[1] > bwd[0] + bwd[2], bwd


def test_a_frozen_bottom_has_no_backward_time_and_hooks_go_away() -> None:
    blocks = nn.ModuleList([Block(True), Block(False), Block(False)])
    fwd, bwd = timed_step(blocks, frozen=1)
    assert fwd[0] is not None and bwd[0] is None
    assert bwd[1] is not None and bwd[2] is not None
    assert all(not b._forward_hooks and not b._forward_pre_hooks for b in blocks)
