"""The stage engine: for each stage, enter it (operator → freeze → optimizer), then train.

`Trainer.run` reads top to bottom like nanoGPT's loop. Everything that is not
the loop itself lives in its own module and knows nothing of the Trainer:
`commands.decide` turns a control command into an intent that
`command_loop.handle_commands` applies at a step boundary, `StepRunner` runs a
step, `checkpointing`/`restore` save and load the state they are handed (a live
rollback included), `evaluation` and `final` measure and end the run, and
`RunReporter` sends events to a sink (log, status.json as their fold, console)
and takes commands from a source (the control socket, or a script in a test).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from growcockpit.backend.control.progress import LoopState, Progress
from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.data.blocks import Batch, BatchPrefetcher, TokenBlocks
from growcockpit.backend.dist.distributed import DistContext
from growcockpit.backend.dist.fsdp import DeviceMesh, is_sharded, root_gathered, unsharded
from growcockpit.backend.dist.fsdp_grow import ShardedChange
from growcockpit.backend.dist.rank_memory import gather_rank_memory
from growcockpit.backend.loop.command_loop import handle_commands
from growcockpit.backend.loop.evaluation import eval_event, mean_val_loss
from growcockpit.backend.loop.forward import LossModule, StagedForward
from growcockpit.backend.loop.layer_checks import LayerHealth
from growcockpit.backend.loop.optim import lr_at
from growcockpit.backend.loop.plateau import PlateauTrigger, check_event, trigger_for
from growcockpit.backend.loop.recipes import StageRecipes
from growcockpit.backend.loop.samples import SampleCadence, write_samples
from growcockpit.backend.loop.stage_entry import configure_training, enter_stage
from growcockpit.backend.loop.stage_events import (
    awaiting_advance,
    skipped_hold,
)
from growcockpit.backend.loop.step import StepRunner
from growcockpit.backend.loop.step_window import StepOutcome
from growcockpit.backend.state.checkpoint import TrainerPosition
from growcockpit.backend.state.checkpointing import (
    CheckpointCadence,
    TrainState,
    checkpoint_due,
    write_checkpoint,
)
from growcockpit.backend.state.final import finish_run
from growcockpit.backend.state.fsdp_checkpoint import shard_stager
from growcockpit.backend.state.init_from import initial_model, loaded_event
from growcockpit.backend.state.levels import LevelSnapshot
from growcockpit.backend.state.restore import (
    advised_rollback_step,
    restore_trainer,
    rollback_trainer,
)
from growcockpit.grow import (
    GrowResult,
    set_train_modes,
)
from growcockpit.metrics import LayerStatsSampler, LayerTimer
from growcockpit.plan import dump_plan, plan_to_dict
from growcockpit.plan.edit import end_stage_early
from growcockpit.plan.types import Plan, Stage
from growcockpit.protocol.events import PlanChanged
from growcockpit.protocol.rundir import RunPaths
from growcockpit.protocol.safe_fs import write_atomic


class Trainer:
    def __init__(
        self,
        plan: Plan,
        run_dir: Path,
        data: TokenBlocks,
        reporter: RunReporter,
        device: torch.device,
        dist: DistContext | None = None,
    ) -> None:
        self.plan = plan
        self.dist = dist or DistContext()
        self.run_dir = run_dir
        self.data = data
        self.report = reporter
        self.device = device
        self.pos = TrainerPosition(plan=plan_to_dict(plan))
        self.fsdp = plan.distributed.strategy == "fsdp" and self.dist.enabled
        reads = not self.fsdp or self.dist.is_main  # FSDP: rank 0 reads init_from, then shards
        with reporter.startup.phase("init_from" if plan.model.init_from else "model"):
            model, notes = initial_model(plan, data.tokenizer, read_weights=reads)
            self.model: nn.Module = model.to(device)
        for note in notes:
            reporter.warn(note)
        if plan.model.init_from is not None and reads:
            reporter.emit(loaded_event(plan, self.model, data, device))
        self.optimizer: torch.optim.Optimizer | None = None
        self.forward = StagedForward(0, True)
        self.train_module: nn.Module = LossModule(self.model, self.forward)
        self.stats = LayerStatsSampler(self.model)
        self.health = LayerHealth(reporter)  # backend/loop/layer_checks.py
        self.timer = LayerTimer(device)
        self.prefetch = BatchPrefetcher(
            data, plan.optim.batch_size, stride=self.dist.world_size, pin=device.type == "cuda"
        )
        self.layer_ms: tuple[list[float | None], list[float | None]] = ([], [])
        self.steps = StepRunner(plan.optim.precision, device)
        self.last_loss: float | None = None
        self.paused = False
        self.lr_raised_at: int | None = None  # later checkpoints may hold ruined weights
        self.checkpoint_scales: dict[int, float] = {}  # step -> the LR scale it was saved at
        self.waiting = False
        self.advance_now = False
        self.stopping = False
        self.stop_requested = False
        self.rewound = False  # set by rollback: re-enter the run loop at the restored position
        self.cadence = CheckpointCadence(plan.checkpoint)
        self.levels: dict[int, LevelSnapshot] = {}  # open levels, by coalesce stage (plan walk)
        self.recipes = StageRecipes()
        self.plateau: PlateauTrigger | None = None  # advance = "plateau": asked after each step
        self.evaluated_at: int | None = None  # the step of the latest evaluation
        self.sample_cadence = SampleCadence()  # [samples]: text at some evaluations
        self.mesh: DeviceMesh | None = None  # FSDP's device mesh, made at the first shard
        self.sharded_change: ShardedChange | None = None  # FSDP: within a stage change

    # ---- the run -----------------------------------------------------------------
    def run(self) -> str:
        """Train through every stage; returns the final status."""
        while self.pos.stage_index < len(self.plan.stages) and not self.stopping:
            if not self.pos.stage_entered:
                self.enter_stage()
            ended = self.train_stage()
            if self.rewound:  # rollback: the restored position decides what comes next
                self.rewound = False
                self.steps.discard()  # unreported steps of the abandoned timeline
                continue
            self.pos.enter_reason = ended
            self.flush_steps()  # steps not yet reported (advance or stop mid-window)
            self.health.stage_ended(self.model, self.pos.step)  # frozen layers that moved
            if self.stopping:
                break
            self.pos.stage_index += 1
            self.pos.step_in_stage = 0
            self.pos.stage_entered = False
            self.advance_now = False
        return self.finish()

    def train_stage(self) -> str:
        """Train the current stage; returns why it ended (the next stage's `reason`)."""
        stage = self.stage
        while True:
            self.handle_commands(block=self.paused or self.waiting)
            if self.stopping or self.advance_now or self.rewound:
                if self.advance_now and not (self.stopping or self.rewound):
                    self.end_early(stage)
                return "command"
            if self.paused:
                continue
            if self.plateau is not None and self.plateau.fired:
                self.end_early(stage)
                return "plateau"
            if self.pos.step_in_stage >= stage.steps:
                if stage.advance == "manual" and self.pos.stage_index + 1 < len(self.plan.stages):
                    self.wait_for_advance()
                    continue
                return "steps"
            with self.report.startup.phase("first_step") as first:  # a no-op after the first
                outcome = self.train_step(report=first.active)  # reported: start-up ends
            self.after_step(outcome)

    def end_early(self, stage: Stage) -> None:
        """The stage ends before its `steps` (plateau or `advance`): it counts the steps it
        ran, so totals, ETAs and the LR schedule follow (and a budget's fill stage is refitted).
        A stage left before its first step keeps its plan (a stage has at least one step)."""
        done = self.pos.step_in_stage
        if 0 < done < stage.steps:
            self.replan(
                end_stage_early(self.plan, self.pos.stage_index, done), self.pos.stage_index
            )

    def replan(self, plan: Plan, from_stage: int) -> None:
        """Run `plan` from here on and say so (plan_changed from stage `from_stage` on)."""
        self.plan = plan
        if self.dist.is_main:
            write_atomic(RunPaths(self.run_dir).plan, dump_plan(plan).encode("utf-8"))
        self.report.emit(
            PlanChanged(step=self.pos.step, from_stage=from_stage, plan=plan_to_dict(plan))
        )

    def progress(self) -> Progress:
        state: LoopState = "paused" if self.paused else "waiting" if self.waiting else "running"
        return Progress(
            self.plan,
            self.pos.stage_index,
            self.pos.step,
            self.last_loss,
            state,
            self.stopping,
            self.pos.lr_scale,
        )

    def handle_commands(self, block: bool) -> None:
        """Apply queued commands at this step boundary (backend/loop/command_loop.py)."""
        handle_commands(self, block)

    def train_step(self, report: bool = False) -> StepOutcome | None:
        """One optimizer step (backend/loop/step.py); an outcome on steps that report
        (every `log_every_steps`, or now if `report`)."""
        return self.steps.run(self, report)

    def after_step(self, outcome: StepOutcome | None) -> None:
        """`outcome` is None on steps that read nothing from the device (log_every_steps)."""
        loss = outcome.loss if outcome is not None else None
        if loss is not None:
            self.last_loss = loss
            if self.plateau is not None:
                fired = self.plateau.observe(loss, self.pos.tokens)
                if fired or self.pos.step % max(1, self.plan.metrics.every_steps) == 0:
                    self.report.emit(check_event(self.plateau, self.pos.step, self.pos.stage_index))
        self.recipes.after_step(self.pos.step_in_stage, self.pos.step)
        self.report_rank_memory()
        if outcome is not None and self.pause_if_skipped(outcome):
            return
        every = self.plan.metrics.eval_every_steps
        if every > 0 and self.pos.step % every == 0:
            self.evaluate()
        self.cadence.spec = self.plan.checkpoint  # an edit may have changed it
        reason = checkpoint_due(self.cadence, self.pos.step, self.dist, self.device)
        if reason:
            self.checkpoint(reason)

    def report_rank_memory(self) -> None:
        """Every `metrics.every_steps` steps, each rank's memory in one event (all ranks
        gather in step; backend/dist/rank_memory.py)."""
        every = self.plan.metrics.every_steps
        if every <= 0 or self.pos.step % every != 0:
            return
        strategy = self.plan.distributed.strategy if self.dist.enabled else "single"
        where = (self.pos.step, self.pos.stage_index, strategy)
        event = gather_rank_memory(self.dist, self.model, self.optimizer, self.device, where)
        if event is not None:
            self.report.emit(event)

    def pause_if_skipped(self, outcome: StepOutcome) -> bool:
        """Pause with an error naming the rollback when a reported window skipped an update:
        a non-finite loss or gradient, or a spike (backend/loop/step.py, backend/loop/sentinel.py),
        at the checkpoint `advised_rollback_step` picks (backend/state/restore.py)."""
        if outcome.finite:
            return False
        self.paused = True
        root = RunPaths(self.run_dir).checkpoints
        good = advised_rollback_step(root, self.pos.step, self.lr_raised_at)
        scale = self.checkpoint_scales.get(good or 0, self.pos.lr_scale)  # good's own scale
        hold = skipped_hold(outcome, self.pos.step, good, str(self.run_dir), scale)
        self.report.emit(hold.error)
        self.report.paused(self.progress(), reason=hold.reason)
        return True

    # ---- stages ------------------------------------------------------------------
    @property
    def stage(self) -> Stage:
        return self.plan.stages[self.pos.stage_index]

    def enter_stage(self) -> None:
        """Apply the stage's operator, freeze policy and a fresh optimizer (loop/stage_entry.py)."""
        enter_stage(self)

    def configure_training(
        self, stage: Stage, trainable: list[int], grow: GrowResult | None = None
    ) -> None:
        configure_training(self, stage, trainable, grow)

    def set_train_modes(self) -> None:
        set_train_modes(self.model)

    def wait_for_advance(self) -> None:
        if not self.waiting:
            self.waiting = True
            self.report.emit(awaiting_advance(self.stage, self.pos.stage_index, self.pos.step))

    # ---- helpers -----------------------------------------------------------------
    def batch(self, step: int, micro: int = 0) -> Batch:
        """Micro-batch `micro` of global step `step` for this rank: a pure function of its index."""
        index = (
            step * self.plan.optim.grad_accum_steps + micro
        ) * self.dist.world_size + self.dist.rank
        return self.prefetch.get(index).to(self.device)

    def current_lr(self) -> float:
        return lr_at(
            self.plan,
            self.pos.stage_index,
            self.pos.step_in_stage,
            self.pos.step,
            self.pos.lr_scale,
        )

    def stats_due(self) -> bool:
        every = self.plan.metrics.every_steps
        return (
            not self.fsdp and self.dist.is_main and every > 0 and (self.pos.step + 1) % every == 0
        )

    def timing_due(self) -> bool:
        every = self.plan.metrics.timing_every_steps
        return (
            not self.fsdp and self.dist.is_main and every > 0 and (self.pos.step + 1) % every == 0
        )

    def probe_loss(self) -> float | None:
        """Loss on the first validation batch: shows what an operator did to the function."""
        batches = self.data.val_batches(self.plan.optim.batch_size, 1)
        with root_gathered(self.train_module):
            return mean_val_loss(self.model, batches, self.device, self.steps.autocast())

    def evaluate(self) -> None:
        self.evaluated_at = self.pos.step
        batches = self.data.val_batches(self.plan.optim.batch_size, self.plan.metrics.eval_batches)
        autocast = self.steps.autocast()
        with root_gathered(self.train_module):
            event = eval_event(
                self.model, batches, self.device, autocast, self.pos.step, self.pos.stage_index
            )
        if event is not None:
            self.report.emit(event)
        self.write_samples(final=False)

    def write_samples(self, final: bool) -> None:
        """`[samples]` when due (backend/loop/samples.py): rank 0 only, but all under FSDP."""
        due = self.sample_cadence.take(self.plan, self.pos.step, final)
        if not due or not (self.dist.is_main or self.fsdp):
            return
        stage = min(self.pos.stage_index, len(self.plan.stages) - 1)  # past the last at the end
        with root_gathered(self.train_module):
            event = write_samples(
                self.model,
                self.data.tokenizer,
                self.plan,
                self.device,
                self.steps.autocast(),
                self.pos.step,
                stage,
            )
        if self.dist.is_main:
            self.report.emit(event)

    def checkpoint(self, reason: str) -> Path | None:
        self.pos.plateau = self.plateau.state() if self.plateau is not None else None
        self.cadence.written(self.pos.step)
        scaler = self.steps.scaler.state_dict() if self.steps.scaler else None
        shards = None
        if self.fsdp and is_sharded(self.model):  # every rank writes its own shards
            shards = shard_stager(self.model, self.optimizer, self.last_loss, self.dist)
        state = TrainState(
            self.model, self.optimizer, self.pos, self.plan, self.levels, scaler, self.last_loss
        )
        root = RunPaths(self.run_dir).checkpoints
        path = write_checkpoint(root, state, reason, self.dist, self.device, self.report, shards)
        if path is not None:
            self.checkpoint_scales[self.pos.step] = self.pos.lr_scale
        return path

    def restore(self, checkpoint_dir: Path) -> None:
        """Continue from a checkpoint: same weights, optimizer, plan position and RNG."""
        restore_trainer(self, checkpoint_dir)
        self.checkpoint_scales[self.pos.step] = self.pos.lr_scale
        self.plateau = trigger_for(self.stage, self.pos.plateau) if self.pos.stage_entered else None
        self.cadence = CheckpointCadence(self.plan.checkpoint)
        self.cadence.written(self.pos.step)

    def rollback(self, step: int | None, lr_scale: float | None = None) -> str:
        """Restore an earlier checkpoint in this live run (backend/state/restore.py); the ack
        text. No step while paused after an LR raise: the newest checkpoint from before it,
        as a blow-up's advice names (the cockpit's one-key rollback sends no step)."""
        if step is None and self.paused and self.lr_raised_at is not None:
            root = RunPaths(self.run_dir).checkpoints
            step = advised_rollback_step(root, self.pos.step, self.lr_raised_at)
        done = rollback_trainer(self, step, lr_scale)
        self.lr_raised_at = None
        paused = f"; still paused: `growcockpit ctl {self.run_dir} resume` trains on"
        return done + (paused if self.paused else "")

    def flush_steps(self) -> None:
        outcome = self.steps.flush(self)
        if outcome is None:
            return
        self.last_loss = outcome.loss
        self.pause_if_skipped(outcome)

    def final_evaluation(self) -> None:
        """Evaluate at the last step unless the periodic evaluation just did: a run's final
        validation loss (what compare, the pin and a race's rung read) is then its own,
        never up to `eval_every_steps - 1` steps old."""
        if self.plan.metrics.eval_every_steps <= 0 or self.pos.step == 0:
            return
        if self.evaluated_at != self.pos.step:
            self.evaluate()
        self.write_samples(final=True)  # the final model's text, also off the cadence

    def finish(self) -> str:
        self.prefetch.close()
        self.flush_steps()
        self.final_evaluation()
        status = "stopped" if self.stopping else "completed"
        if self.stopping:
            self.checkpoint("stop")
        final = RunPaths(self.run_dir).final
        if self.recipes.gates is not None:
            self.report.warn(self.recipes.unfinished_ramp_note(), step=self.pos.step)
        model = unsharded(self.model, self.device)  # FSDP: gathered on every rank
        finish_run(model, self.data.tokenizer, final, self.dist, self.report, status, self.pos.step)
        return status
