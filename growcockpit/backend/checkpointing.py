"""When the engine checkpoints, and how a checkpoint of a live trainer is written.

Checkpoints are on by default (issue 11 §5): every `checkpoint.every_minutes`
of wall clock, at every stage start (before the operator, so a failed or
regretted grow can be undone), and every `every_steps` steps when set. A state
that is not finite is never written: the engine warns and keeps the last good
checkpoint for `rollback`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from growcockpit.backend import rng
from growcockpit.backend.checkpoint import NonFiniteState, save_checkpoint
from growcockpit.backend.operators import levels_to_save
from growcockpit.plan import plan_to_dict
from growcockpit.plan.types import CheckpointSpec
from growcockpit.protocol.events import Checkpoint

if TYPE_CHECKING:
    from growcockpit.backend.engine import Trainer


@dataclass
class CheckpointCadence:
    """Step and wall-clock cadence; `written` resets both clocks."""

    spec: CheckpointSpec
    last_time: float = field(default_factory=time.monotonic)
    last_step: int | None = None

    def due(self, step: int) -> str | None:
        """The reason to checkpoint after `step`, or None (this process's clock)."""
        if self.spec.every_steps > 0 and step % self.spec.every_steps == 0:
            return "periodic"
        minutes = self.spec.every_minutes
        if minutes > 0 and time.monotonic() - self.last_time >= minutes * 60:
            return "timer"
        return None

    def stage_start_due(self, step: int) -> bool:
        """A stage starting at the step just checkpointed needs no second copy."""
        return self.last_step != step

    def written(self, step: int) -> None:
        self.last_time = time.monotonic()
        self.last_step = step


def checkpoint_due(trainer: Trainer) -> str | None:
    """The cadence's verdict, agreed by all DDP ranks.

    A checkpoint is a collective (every rank's RNG is gathered), and each rank
    has its own clock: the ranks take the wall-clock decision together (any
    rank due means all are), in one small host message per step.
    """
    trainer.cadence.spec = trainer.plan.checkpoint
    reason = trainer.cadence.due(trainer.pos.step)
    if reason == "periodic" or not trainer.dist.enabled or trainer.cadence.spec.every_minutes <= 0:
        return reason
    _, any_due = trainer.dist.agree(0, reason == "timer", trainer.device)
    return "timer" if any_due else None


def write_checkpoint(trainer: Trainer, reason: str) -> Path | None:
    """Save the trainer's state (rank 0 writes); None when it was not finite."""
    trainer.cadence.written(trainer.pos.step)
    trainer.pos.plan = plan_to_dict(trainer.plan)
    trainer.pos.cpu_threads = torch.get_num_threads()
    root = trainer.run_dir / "checkpoints"
    rng_ranks = rng.gather(trainer.dist, trainer.device)  # a collective: every rank, first
    if not trainer.dist.is_main:
        return root / f"step-{trainer.pos.step}"
    try:
        path = save_checkpoint(
            root,
            trainer.model,
            trainer.optimizer,
            trainer.pos,
            trainer.plan.checkpoint.keep,
            levels_to_save(trainer.levels),
            rng_ranks=rng_ranks,
            scaler=trainer.steps.scaler.state_dict() if trainer.steps.scaler else None,
            loss=trainer.last_loss,
        )
    except NonFiniteState as exc:
        last = trainer.report.status.last_checkpoint
        trainer.report.warn(
            f"no {reason} checkpoint at step {trainer.pos.step}: {exc}; "
            + (
                f"the last good one ({Path(last).name}) is kept: `rollback` returns to it"
                if last
                else "`rollback STEP` returns to an earlier checkpoint"
            ),
            step=trainer.pos.step,
        )
        return None
    trainer.report.emit(Checkpoint(step=trainer.pos.step, path=str(path), reason=reason))
    trainer.report.status_checkpoint(trainer, str(path))
    return path
