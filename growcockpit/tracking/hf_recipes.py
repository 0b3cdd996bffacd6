"""A stage's growth recipes inside a Hugging Face Trainer, done from a callback.

What the engine does inside its own step, done here through hooks the Trainer never sees:
- `ramp_steps`: the blocks the operator added are gated (grow/gates.py, a forward hook:
  y = x + m·(block(x) − x)), m rising 0 → 1 over the stage's first `ramp_steps` steps.
- `layer_drop = p`: at each training step every block but the first and the last is
  skipped with probability p (grow/layer_drop.py, the engine's draw): a forward hook puts
  the block's input in place of its output. The block still computes (no time saved, as
  in the engine's staged forward), but the step trains the sub-network the engine's would.
- `lr` (the stage's peak LR) and `rewarmup_steps` / a later stage's `warmup_steps` (linear
  re-warm-up after the operator): a factor on the LR, applied inside each optimizer step
  by the tracker's LR hook, on top of the Trainer's own schedule and of `ctl set_lr`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import nn
from torch.utils.hooks import RemovableHandle

from growcockpit.grow.gates import BlockGates, ramp_value
from growcockpit.grow.layer_drop import skipped_blocks
from growcockpit.plan.types import Stage, stage_warmup


class LayerDrop:
    """Forward hooks on every block: a block drawn for skipping at this step returns its input."""

    def __init__(self, layers: Sequence[nn.Module], p: float, seed: int) -> None:
        self.p, self.seed, self.depth = p, seed, len(layers)
        self.skip: frozenset[int] = frozenset()
        self._handles: list[RemovableHandle] = [
            block.register_forward_hook(self._hook(i), with_kwargs=True)
            for i, block in enumerate(layers)
        ]

    def at(self, step: int) -> None:
        """The blocks skipped in the training step with 0-based global index `step`."""
        self.skip = skipped_blocks(self.seed, step, self.depth, self.p)

    def _hook(self, index: int) -> Any:
        def hook(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
            if index not in self.skip or not module.training:
                return None
            x = args[0] if args else kwargs["hidden_states"]
            return (x, *out[1:]) if isinstance(out, tuple) else x

        return hook

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


class StageRecipes:
    """The recipes of the stage being trained; `at(global_step)` before each step."""

    def __init__(
        self,
        stage: Stage,
        index: int,
        entered_at: int,
        layers: Sequence[nn.Module],
        new_ids: Sequence[int],
        trainer_lr: float,
        seed: int,
    ) -> None:
        self.entered_at = entered_at
        self.warmup = stage_warmup(stage, index, 0)  # 0: the Trainer's warm-up is its own
        self.peak = stage.lr / trainer_lr if stage.lr is not None and trainer_lr > 0 else 1.0
        self.ramp = stage.ramp_steps or 0
        self.gates = BlockGates(layers, new_ids) if self.ramp and new_ids else None
        self.drop = LayerDrop(layers, stage.layer_drop, seed) if stage.layer_drop > 0 else None

    def at(self, global_step: int) -> float:
        """Set the gates and the skipped blocks for the step with 0-based index
        `global_step`; returns its LR factor (the stage's peak × its re-warm-up)."""
        t = global_step - self.entered_at
        if self.gates is not None and self.gates.active:
            self.gates.set(ramp_value(t, self.ramp))
        if self.drop is not None:
            self.drop.at(global_step)
        warm = min(1.0, (t + 1) / self.warmup) if self.warmup > 0 else 1.0
        return self.peak * warm

    def close(self) -> None:
        if self.gates is not None:
            self.gates.remove()
        if self.drop is not None:
            self.drop.remove()
