"""Gated (masked) new blocks (masked structural growth, MSG).

A gated block computes y = x + m·(block(x) − x). At m = 0 it is exactly the
identity (0·finite = 0 and x + 0 = x, bitwise), so a model grown by copying
blocks still computes the old function, for post-LN BERT too, where zeroing
projections cannot give an identity (the LayerNorm follows the residual sum).

The gate is a forward hook, not a wrapper module: state_dict keys,
`save_pretrained` output and every caller of the block (the staged forward,
Hugging Face's own forward, with whatever keyword arguments it passes) stay
unchanged. At m = 1 the gate is removed rather than left in place, because
x + 1·(b − x) is not bitwise b: after the ramp the compute is exactly the
ungated model's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle


class BlockGates:
    """Gates on blocks `ids` of `layers`, all at the same value m."""

    def __init__(self, layers: Sequence[nn.Module], ids: Sequence[int], value: float = 0.0) -> None:
        self.ids = sorted(ids)
        self.value = 0.0
        self._handles: list[RemovableHandle] = [
            layers[i].register_forward_hook(self._gate, with_kwargs=True) for i in self.ids
        ]
        self.set(value)

    @property
    def active(self) -> bool:
        return bool(self._handles)

    def set(self, value: float) -> None:
        """Set m for every gate; m ≥ 1 removes them (the ramp is over)."""
        if not value >= 0.0:
            raise ValueError(f"gate value must be ≥ 0, got {value}")
        self.value = min(1.0, value)
        if self.value >= 1.0:
            self.remove()

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _gate(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any
    ) -> Any:
        x = args[0] if args else kwargs["hidden_states"]
        if isinstance(output, tuple):
            return (self._mix(x, output[0]), *output[1:])
        return self._mix(x, output)

    def _mix(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + self.value * (y - x)


def ramp_value(step_in_stage: int, ramp_steps: int) -> float:
    """m = min(1, t / K) at the stage's t-th training step (t = 0 at growth)."""
    if ramp_steps < 1:
        raise ValueError(f"ramp_steps must be ≥ 1, got {ramp_steps}")
    return min(1.0, max(0, step_in_stage) / ramp_steps)
