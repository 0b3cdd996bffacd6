"""Per-step state that a stage's growth recipes add to training.

- `ramp_steps = K`: the blocks the stage's operator added are gated,
  y = x + m·(block(x) − x), m = min(1, t/K) at the stage's t-th step
  (`grow.gates`). m is a pure function of the step in the stage, and which
  blocks are gated is kept in the trainer position, so a resume inside the
  ramp rebuilds exactly the same gates: no extra checkpoint state.
- `layer_drop = p`: the staged forward skips the blocks
  `grow.layer_drop.skipped_blocks(seed, step, ...)` names, a pure function of
  the plan's seed and the global step: resume needs no extra state either.
  Evaluation builds its own full forward, so it always runs every block.

The engine calls `install` when a stage's training is configured (entering
it, or restoring into it) and `after_step` after every optimizer step, so the
state always describes the *next* training step.
"""

from __future__ import annotations

from torch import nn

from growcockpit.backend.loop.forward import StagedForward
from growcockpit.grow.gates import BlockGates, ramp_value
from growcockpit.grow.layer_drop import skipped_blocks
from growcockpit.grow.model_parts import get_layers
from growcockpit.grow.stack import GrowResult
from growcockpit.plan.types import Stage


def gated_layer_ids(stage: Stage, grow: GrowResult | None) -> list[int]:
    """The blocks a `ramp_steps` stage gates: the ones its operator added."""
    if stage.ramp_steps is None or grow is None:
        return []
    return sorted(grow.new_layer_ids)


def fresh_state_layers(stage: Stage, grow: GrowResult | None) -> list[int]:
    """New blocks whose Adam moments start at zero when the optimizer carries over:
    gated and zero-initialised ones (copies otherwise take their source's)."""
    if grow is None or (stage.ramp_steps is None and stage.init != "zero"):
        return []
    return sorted(grow.new_layer_ids)


class StageRecipes:
    """The current stage's ramp gates and layer-drop pattern."""

    def __init__(self) -> None:
        self.gates: BlockGates | None = None
        self.ramp_steps = 0
        self.forward: StagedForward | None = None
        self.layer_drop = 0.0
        self.depth = 0
        self.seed = 0

    def install(
        self,
        model: nn.Module,
        stage: Stage,
        gated: list[int],
        forward: StagedForward,
        *,
        seed: int,
        step_in_stage: int,
        step: int,
    ) -> None:
        self.clear()
        if stage.ramp_steps is not None and gated:
            self.ramp_steps = stage.ramp_steps
            value = ramp_value(step_in_stage, stage.ramp_steps)
            if value < 1.0:
                self.gates = BlockGates(list(get_layers(model)), gated, value)
        self.forward = forward
        self.layer_drop = stage.layer_drop
        self.depth = len(get_layers(model))
        self.seed = seed
        self._set_skip(step)

    def after_step(self, step_in_stage: int, step: int) -> None:
        if self.gates is not None:
            self.gates.set(ramp_value(step_in_stage, self.ramp_steps))
            if not self.gates.active:
                self.gates = None
        self._set_skip(step)

    def _set_skip(self, step: int) -> None:
        if self.forward is not None and self.layer_drop > 0:
            self.forward.skip = skipped_blocks(self.seed, step, self.depth, self.layer_drop)

    def unfinished_ramp_note(self) -> str:
        """Why final/ differs from the model that trained, when a run ends inside a ramp."""
        value = self.gates.value if self.gates is not None else 1.0
        return (
            f"the run ended inside a ramp (gate m = {value:.2f} on blocks "
            f"{self.gates.ids if self.gates else []}); final/ holds the weights without the gate, "
            "which computes a different function: resume from the last checkpoint to finish the ramp"
        )

    def clear(self) -> None:
        if self.gates is not None:
            self.gates.remove()
            self.gates = None
        if self.forward is not None:
            self.forward.skip = frozenset()
        self.forward = None
        self.layer_drop = 0.0
