"""When the engine checkpoints, and how a checkpoint of a live trainer is written.

Checkpoints are on by default: every `checkpoint.every_minutes`
of wall clock, at every stage start (before the operator, so a failed or
regretted grow can be undone), and every `every_steps` steps when set. A state
that is not finite is never written: the engine warns and keeps the last good
checkpoint for `rollback`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.parallel.distributed import DistContext
from growcockpit.backend.state import rng
from growcockpit.backend.state.checkpoint import NonFiniteState, TrainerPosition, save_checkpoint
from growcockpit.backend.state.levels import LevelSnapshot, levels_to_save
from growcockpit.plan import plan_to_dict
from growcockpit.plan.types import CheckpointSpec, Plan
from growcockpit.protocol.events import Checkpoint


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
        """A stage starting at the step just checkpointed needs no second copy; none at
        all when the plan turned stage-start checkpoints off."""
        return self.spec.stage_start and self.last_step != step

    def written(self, step: int) -> None:
        self.last_time = time.monotonic()
        self.last_step = step


@dataclass
class TrainState:
    """What a checkpoint holds of a live trainer."""

    model: nn.Module
    optimizer: torch.optim.Optimizer | None  # FSDP: over the shards (fsdp_checkpoint writes it)
    pos: TrainerPosition
    plan: Plan
    levels: dict[int, LevelSnapshot]
    scaler: dict[str, Any] | None
    loss: float | None


def checkpoint_due(
    cadence: CheckpointCadence, step: int, dist: DistContext, device: torch.device
) -> str | None:
    """The cadence's verdict, agreed by all DDP ranks.

    A checkpoint is a collective (every rank's RNG is gathered), and each rank
    has its own clock: the ranks take the wall-clock decision together (any
    rank due means all are), in one small host message per step.
    """
    reason = cadence.due(step)
    if reason == "periodic" or not dist.enabled or cadence.spec.every_minutes <= 0:
        return reason
    _, any_due = dist.agree(0, reason == "timer", device)
    return "timer" if any_due else None


ShardStager = Callable[[Path, int], "Path | None"]
"""Under FSDP: every rank writes its shards of checkpoint `step` under `root` (a collective);
the temporary directory holding them on rank 0, None on the others (backend/state/fsdp_checkpoint.py)."""


def write_checkpoint(
    root: Path,
    state: TrainState,
    reason: str,
    dist: DistContext,
    device: torch.device,
    report: RunReporter,
    shards: ShardStager | None = None,
) -> Path | None:
    """Save the trainer's state under `root` (rank 0 writes; under FSDP with `shards`, every
    rank writes its shards first); None when it was not finite."""
    pos = state.pos
    pos.plan = plan_to_dict(state.plan)
    pos.cpu_threads = torch.get_num_threads()
    rng_ranks = rng.gather(dist, device)  # a collective: every rank, first
    try:
        staged = shards(root, pos.step) if shards is not None else None  # a collective too
        if not dist.is_main:
            return root / f"step-{pos.step}"
        path = save_checkpoint(
            root,
            state.model,
            state.optimizer,
            pos,
            state.plan.checkpoint.keep,
            levels_to_save(state.levels),
            rng_ranks=rng_ranks,
            scaler=state.scaler,
            loss=state.loss,
            staged=staged,
        )
    except NonFiniteState as exc:
        if not dist.is_main:
            return None
        last = report.last_checkpoint
        report.warn(
            f"no {reason} checkpoint at step {pos.step}: {exc}; "
            + (
                f"the last good one ({Path(last).name}) is kept: `rollback` returns to it"
                if last
                else "`rollback STEP` returns to an earlier checkpoint"
            ),
            step=pos.step,
        )
        return None
    report.emit(Checkpoint(step=pos.step, path=str(path), reason=reason))
    return path
