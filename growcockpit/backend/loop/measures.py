"""What the engine measures and tells between steps: the validation loss (the periodic
evaluation and an operator's probe), samples of text, each rank's memory, the plateau
trigger's view, a changed plan, the hold a skipped update calls for, a checkpoint.

Functions of what they read of the trainer (`MeasureReads`), never writing it: the engine
(backend/loop/engine.py) decides when they run and keeps what they leave behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from torch import nn

from growcockpit.backend.data.blocks import TokenBlocks
from growcockpit.backend.loop.evaluation import eval_event, mean_val_loss
from growcockpit.backend.loop.plateau import PlateauTrigger, check_event
from growcockpit.backend.loop.samples import SampleCadence, write_samples
from growcockpit.backend.loop.stage_events import Hold, skipped_hold
from growcockpit.backend.loop.step import StepRunner
from growcockpit.backend.loop.step_window import StepOutcome
from growcockpit.backend.loop.trainer_reads import TrainerReads
from growcockpit.backend.parallel.fsdp import is_sharded, root_gathered
from growcockpit.backend.parallel.rank_memory import gather_rank_memory
from growcockpit.backend.state.checkpointing import TrainState, write_checkpoint
from growcockpit.backend.state.fsdp_checkpoint import shard_stager
from growcockpit.backend.state.levels import LevelSnapshot
from growcockpit.backend.state.restore import advised_rollback_step
from growcockpit.plan import dump_plan, plan_to_dict
from growcockpit.protocol.events import PlanChanged
from growcockpit.protocol.rundir import RunPaths
from growcockpit.protocol.safe_fs import write_atomic


class MeasureReads(TrainerReads, Protocol):
    """What a measurement reads of the live trainer (backend/loop/engine.py's `Trainer`)."""

    @property
    def data(self) -> TokenBlocks: ...

    @property
    def fsdp(self) -> bool: ...

    @property
    def train_module(self) -> nn.Module: ...

    @property
    def steps(self) -> StepRunner: ...

    @property
    def sample_cadence(self) -> SampleCadence: ...

    @property
    def levels(self) -> dict[int, LevelSnapshot]: ...

    @property
    def last_loss(self) -> float | None: ...

    @property
    def run_dir(self) -> Path: ...

    @property
    def plateau(self) -> PlateauTrigger | None: ...

    @property
    def lr_raised_at(self) -> int | None: ...

    @property
    def checkpoint_scales(self) -> dict[int, float]: ...


def probe_loss(t: MeasureReads) -> float | None:
    """Loss on the first validation batch: shows what an operator did to the function."""
    batches = t.data.val_batches(t.plan.optim.batch_size, 1)
    with root_gathered(t.train_module):
        return mean_val_loss(t.model, batches, t.device, t.steps.autocast())


def evaluate(t: MeasureReads) -> None:
    """The periodic evaluation (eval event), then samples when due."""
    batches = t.data.val_batches(t.plan.optim.batch_size, t.plan.metrics.eval_batches)
    autocast = t.steps.autocast()
    with root_gathered(t.train_module):
        event = eval_event(t.model, batches, t.device, autocast, t.pos.step, t.pos.stage_index)
    if event is not None:
        t.report.emit(event)
    samples(t, final=False)


def samples(t: MeasureReads, final: bool) -> None:
    """`[samples]` when due (backend/loop/samples.py): rank 0 only, but all under FSDP."""
    due = t.sample_cadence.take(t.plan, t.pos.step, final)
    if not due or not (t.dist.is_main or t.fsdp):
        return
    stage = min(t.pos.stage_index, len(t.plan.stages) - 1)  # past the last at the end
    with root_gathered(t.train_module):
        event = write_samples(
            t.model,
            t.data.tokenizer,
            t.plan,
            t.device,
            t.steps.autocast(),
            t.pos.step,
            stage,
        )
    if t.dist.is_main:
        t.report.emit(event)


def observe_plateau(t: MeasureReads, loss: float) -> None:
    """`advance = "plateau"`: the trigger sees the reported loss; its state is reported
    every `metrics.every_steps` steps and when it fires (the stage then ends)."""
    if t.plateau is None:
        return
    fired = t.plateau.observe(loss, t.pos.tokens)
    if fired or t.pos.step % max(1, t.plan.metrics.every_steps) == 0:
        t.report.emit(check_event(t.plateau, t.pos.step, t.pos.stage_index))


def announce_plan(t: MeasureReads, from_stage: int) -> None:
    """The trainer's plan, changed: written to the run's plan.toml (rank 0) and said as
    plan_changed from stage `from_stage` on."""
    if t.dist.is_main:
        write_atomic(RunPaths(t.run_dir).plan, dump_plan(t.plan).encode("utf-8"))
    t.report.emit(PlanChanged(step=t.pos.step, from_stage=from_stage, plan=plan_to_dict(t.plan)))


def skipped_hold_at(t: MeasureReads, outcome: StepOutcome) -> Hold:
    """The pause a skipped update calls for (non-finite or spiked: backend/loop/step.py),
    naming the checkpoint `advised_rollback_step` picks and the LR scale it was saved at."""
    root = RunPaths(t.run_dir).checkpoints
    good = advised_rollback_step(root, t.pos.step, t.lr_raised_at)
    scale = t.checkpoint_scales.get(good or 0, t.pos.lr_scale)  # good's own scale
    return skipped_hold(outcome, t.pos.step, good, str(t.run_dir), scale)


def report_rank_memory(t: MeasureReads) -> None:
    """Every `metrics.every_steps` steps, each rank's memory in one event (all ranks
    gather in step; backend/parallel/rank_memory.py)."""
    every = t.plan.metrics.every_steps
    if every <= 0 or t.pos.step % every != 0:
        return
    strategy = t.plan.distributed.strategy if t.dist.enabled else "single"
    where = (t.pos.step, t.pos.stage_index, strategy)
    event = gather_rank_memory(t.dist, t.model, t.optimizer, t.device, where)
    if event is not None:
        t.report.emit(event)


def write_trainer_checkpoint(t: MeasureReads, reason: str) -> Path | None:
    """The trainer's state under checkpoints/ (backend/state/checkpointing.py); under FSDP
    every rank writes its own shards. None when the state is not finite."""
    scaler = t.steps.scaler.state_dict() if t.steps.scaler else None
    shards = None
    if t.fsdp and is_sharded(t.model):
        shards = shard_stager(t.model, t.optimizer, t.last_loss, t.dist)
    state = TrainState(t.model, t.optimizer, t.pos, t.plan, t.levels, scaler, t.last_loss)
    root = RunPaths(t.run_dir).checkpoints
    return write_checkpoint(root, state, reason, t.dist, t.device, t.report, shards)
