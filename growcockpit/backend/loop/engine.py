"""The stage engine: for each stage, enter it (operator → freeze → optimizer), then train.

`Trainer.run` reads top to bottom like nanoGPT's loop, and this file is the one writer of
the Trainer's state (tests/backend/test_trainer_single_writer.py): the other modules read
it through small protocols and return values applied here (`stage_entry`: `Operated`,
`Configured`; `StepRunner`: `StepResult`; `state/restore`: `Restored`; `probe`, whose
candidates are child trainers: `Picked`). `command_loop` carries out commands through the
Trainer's methods, `LoopState` steers the loop, `measures` and `final` measure and end the
run, and `RunReporter` sends events to a sink and takes commands from a source.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from growcockpit.backend.control.progress import Progress
from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.control.sinks import EventSink
from growcockpit.backend.data.blocks import Batch, BatchPrefetcher, TokenBlocks
from growcockpit.backend.device import release_cached_memory
from growcockpit.backend.loop import measures, stage_entry
from growcockpit.backend.loop.block_compile import BlockCompiler
from growcockpit.backend.loop.command_loop import handle_commands
from growcockpit.backend.loop.forward import LossModule, StagedForward
from growcockpit.backend.loop.layer_checks import LayerHealth
from growcockpit.backend.loop.loop_state import LoopState
from growcockpit.backend.loop.optim import lr_at, trainable_groups
from growcockpit.backend.loop.plateau import PlateauTrigger, trigger_for
from growcockpit.backend.loop.probe import run_probe
from growcockpit.backend.loop.recipes import StageRecipes, gated_layer_ids
from growcockpit.backend.loop.samples import SampleCadence
from growcockpit.backend.loop.stage_events import awaiting_advance
from growcockpit.backend.loop.step import StepRunner, batch_index
from growcockpit.backend.loop.step_window import StepOutcome
from growcockpit.backend.parallel.distributed import DistContext
from growcockpit.backend.parallel.fsdp import DeviceMesh, unsharded
from growcockpit.backend.parallel.fsdp_grow import ShardedChange
from growcockpit.backend.state import restore as restoring
from growcockpit.backend.state.checkpoint import TrainerPosition
from growcockpit.backend.state.checkpoint_dirs import step_of
from growcockpit.backend.state.checkpointing import CheckpointCadence, checkpoint_due
from growcockpit.backend.state.final import finish_run
from growcockpit.backend.state.levels import LevelSnapshot
from growcockpit.grow import GrowResult
from growcockpit.metrics import LayerStatsSampler, LayerTimer
from growcockpit.plan import plan_to_dict
from growcockpit.plan.edit import end_stage_early
from growcockpit.plan.probe import with_stage
from growcockpit.plan.types import Plan, Stage, trainable_layer_ids
from growcockpit.protocol.rundir import RunPaths


class Trainer:
    def __init__(
        self,
        plan: Plan,
        run_dir: Path,
        data: TokenBlocks,
        reporter: RunReporter,
        device: torch.device,
        dist: DistContext | None = None,
        model: nn.Module | None = None,
    ) -> None:
        """`model`: handed in by a parent (a probe's child trainer, which restores its own
        state next); otherwise stage 1's, built or read from `model.init_from`."""
        self.plan = plan
        self.dist = dist or DistContext()
        self.run_dir = run_dir
        self.data = data
        self.report = reporter
        self.device = device
        self.pos = TrainerPosition(plan=plan_to_dict(plan))
        self.fsdp = plan.distributed.strategy == "fsdp" and self.dist.enabled
        if model is None:  # FSDP: rank 0 reads init_from, then shards
            model = stage_entry.first_model(
                plan, data, reporter, device, not self.fsdp or self.dist.is_main
            )
        self.model: nn.Module = model
        self.optimizer: torch.optim.Optimizer | None = None
        self.forward = StagedForward(0, True)
        self.train_module: nn.Module = LossModule(self.model, self.forward)
        self.stats = LayerStatsSampler(self.model)
        self.health = LayerHealth(reporter)  # backend/loop/layer_checks.py
        self.timer = LayerTimer(device)
        self.prefetch = BatchPrefetcher(
            data, plan.optim.batch_size, stride=self.dist.world_size, pin=device.type == "cuda"
        )
        self.steps = StepRunner(plan.optim.precision, device)
        self.last_loss: float | None = None
        self.loop = LoopState()  # running, paused, waiting, advancing, stopping
        self.lr_raised_at: int | None = None  # later checkpoints may hold ruined weights
        self.checkpoint_scales: dict[int, float] = {}  # step -> the LR scale it was saved at
        self.cadence = CheckpointCadence(plan.checkpoint)
        self.levels: dict[int, LevelSnapshot] = {}  # open levels, by coalesce stage (plan walk)
        self.recipes = StageRecipes()
        self.plateau: PlateauTrigger | None = None  # advance = "plateau": asked after each step
        self.evaluated_at: int | None = None  # the step of the latest evaluation
        self.sample_cadence = SampleCadence()  # [samples]: text at some evaluations
        self.mesh: DeviceMesh | None = None  # FSDP's device mesh, made at the first shard

    def candidate(self, sink: EventSink) -> Trainer:
        """A child trainer for a probe's candidate (backend/loop/probe.py): this run's plan,
        data and device, its events to `sink`; it restores its state from the growth point
        (the live model is a placeholder) and shares the run's one compiler."""
        if self.plan.optim.compile and self.steps.compiler is None:
            self.steps.compiler = BlockCompiler(self.plan.optim.compile_backend)
        report = RunReporter(sink)
        child = Trainer(
            self.plan, self.run_dir, self.data, report, self.device, self.dist, self.model
        )
        child.steps.compiler = self.steps.compiler
        return child

    # ---- the run -----------------------------------------------------------------
    def run(self) -> str:
        """Train through every stage; returns the final status."""
        while self.pos.stage_index < len(self.plan.stages) and not self.loop.stopping:
            if not self.pos.stage_entered:
                self.enter_stage()
            ended = self.train_stage()
            if ended == "rewound":  # rollback: the restored position decides what comes next
                self.steps.discard()  # unreported steps of the abandoned timeline
                continue
            self.pos.enter_reason = ended
            self.flush_steps()  # steps not yet reported (advance or stop mid-window)
            self.health.stage_ended(self.model, self.pos.step)  # frozen layers that moved
            if self.loop.stopping:
                break
            self.pos.stage_index += 1
            self.pos.step_in_stage = 0
            self.pos.stage_entered = False
            self.loop.next_stage()
        return self.finish()

    def train_stage(self) -> str:
        """Train the current stage; returns why it ended (the next stage's `reason`), or
        "rewound" when a rollback moved the run."""
        stage = self.stage
        while True:
            if handle_commands(self, block=self.loop.blocks):  # backend/loop/command_loop.py
                return "rewound"  # a rollback moved the run
            if self.loop.stopping or self.loop.advancing:
                if self.loop.advancing:
                    self.end_early(stage)
                return "command"
            if self.loop.paused:
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
        done, index = self.pos.step_in_stage, self.pos.stage_index
        if 0 < done < stage.steps:
            self.replan(end_stage_early(self.plan, index, done), index)

    def replan(self, plan: Plan, from_stage: int) -> None:
        """Run `plan` from here on and say so (plan_changed from stage `from_stage` on)."""
        self.plan = plan
        measures.announce_plan(self, from_stage)

    def progress(self) -> Progress:
        pos, loop = self.pos, self.loop
        shown = (loop.shown, loop.stopping, pos.lr_scale)
        return Progress(self.plan, pos.stage_index, pos.step, self.last_loss, *shown)

    # ---- what commands and signals ask (backend/loop/command_loop.py, backend/run.py) ----
    @property
    def paused(self) -> bool:
        return self.loop.paused

    def pause(self, reason: str) -> None:
        self.loop.pause()
        self.report.paused(self.progress(), reason=reason)

    def resume(self) -> None:
        self.loop.resume()
        self.report.resumed(self.progress())

    def advance(self) -> None:
        self.loop.advance()

    def stop(self) -> None:
        self.loop.stop()

    def request_stop(self) -> None:
        """A stop signal (SIGTERM/SIGINT/SIGHUP, or one deferred during start-up): the ranks
        agree on it at the next step boundary, then the run checkpoints and ends."""
        self.loop.signal_stop()

    def scale_lr(self, factor: float) -> None:
        self.pos.lr_scale *= factor
        if factor > 1:
            self.lr_raised_at = self.pos.step

    # ---- a step --------------------------------------------------------------------
    def train_step(self, report: bool = False) -> StepOutcome | None:
        """One optimizer step (backend/loop/step.py); an outcome on steps that report
        (every `log_every_steps`, or now if `report`)."""
        done = self.steps.run(self, report)
        self.pos.step += 1
        self.pos.step_in_stage += 1
        self.pos.tokens += done.tokens
        return done.outcome

    def after_step(self, outcome: StepOutcome | None) -> None:
        """`outcome` is None on steps that read nothing from the device (log_every_steps)."""
        loss = outcome.loss if outcome is not None else None
        if loss is not None:
            self.last_loss = loss
            measures.observe_plateau(self, loss)
        self.recipes.after_step(self.pos.step_in_stage, self.pos.step)
        measures.report_rank_memory(self)
        if outcome is not None and self.pause_if_skipped(outcome):
            return
        every = self.plan.metrics.eval_every_steps
        if every > 0 and self.pos.step % every == 0:
            self.evaluate()
        self.cadence.spec = self.plan.checkpoint  # an edit may have changed it
        reason = checkpoint_due(self.cadence, self.pos.step, self.dist, self.device)
        if reason:
            self.checkpoint(reason)

    def pause_if_skipped(self, outcome: StepOutcome) -> bool:
        """Pause with an error naming the rollback when a reported window skipped an update:
        a non-finite loss or gradient, or a spike (backend/loop/step.py, backend/loop/sentinel.py),
        at the checkpoint `advised_rollback_step` picks (backend/state/restore.py)."""
        if outcome.finite:
            return False
        hold = measures.skipped_hold_at(self, outcome)
        self.loop.pause()
        self.report.emit(hold.error)
        self.report.paused(self.progress(), reason=hold.reason)
        return True

    # ---- stages ------------------------------------------------------------------
    @property
    def stage(self) -> Stage:
        return self.plan.stages[self.pos.stage_index]

    def enter_stage(self) -> None:
        """Apply the stage's operator, freeze policy and a fresh optimizer: evaluated by
        backend/loop/stage_entry.py, applied here."""
        if self.stage.enter == "probe":  # the best candidate takes its place (loop/probe.py)
            self.resolve_probe()
        stage = self.stage
        if self.cadence.stage_start_due(self.pos.step):
            with self.report.startup.phase("checkpoint"):
                self.checkpoint("stage")
        self.recipes.clear()  # a stage advanced mid-ramp leaves its gates behind
        self.plateau = trigger_for(stage)
        op = stage_entry.operate(self, stage)
        self.model, self.levels = op.model, op.levels
        trainable = trainable_layer_ids(stage, op.depth_before)
        self.pos.gated_layers = gated_layer_ids(stage, op.grow)
        self.configure_training(stage, trainable, op.grow, op.change)
        freed = release_cached_memory(self.device)  # the replaced model and optimizer
        self.pos.stage_entered = True
        self.loop.next_stage()
        stage_entry.announce_stage(self, stage, op, trainable, freed)

    def configure_training(
        self,
        stage: Stage,
        trainable: list[int],
        grow: GrowResult | None = None,
        change: ShardedChange | None = None,
    ) -> None:
        """The trainable set, its wrapper and a fresh optimizer (backend/loop/stage_entry.py),
        then the layer checks, the stage's recipes and the step module."""
        done = stage_entry.configure_training(self, self.model, stage, trainable, grow, change)
        self.model, self.forward, self.train_module = done.model, done.forward, done.train_module
        self.optimizer, self.stats, self.mesh = done.optimizer, done.stats, done.mesh
        stage_entry.install_checks_and_recipes(self, stage, trainable, done.optimizer)
        self.steps.enter(self)  # spike windows start afresh, the step module is compiled

    def use_compiler(self, compiler: BlockCompiler) -> None:
        """`optim.compile`: the stage's forward runs its blocks compiled (loop/step.py)."""
        self.forward.compiled = compiler

    def resolve_probe(self) -> None:
        """An `enter = "probe"` stage: the candidates tried in child trainers, then back to the
        growth point with the winner in the plan (backend/loop/probe.py)."""
        index, cadence, loss = self.pos.stage_index, self.cadence, self.last_loss
        picked = run_probe(self, self.candidate)
        if picked.start is not None:
            self.restore(picked.start)  # the children drew from the same global RNG
            self.cadence, self.last_loss = cadence, loss
        self.replan(picked.plan, index)
        if picked.event is not None:
            self.report.emit(picked.event)

    def take_candidate(self, stage: Stage) -> None:
        """A probe's child trainer: the current stage is this candidate (not written out)."""
        self.plan = with_stage(self.plan, self.pos.stage_index, stage)

    def wait_for_advance(self) -> None:
        if self.loop.wait():
            self.report.emit(awaiting_advance(self.stage, self.pos.stage_index, self.pos.step))

    def batch(self, step: int, micro: int = 0) -> Batch:
        """Micro-batch `micro` of global step `step` for this rank: a pure function of its index."""
        return self.prefetch.get(batch_index(self.plan, self.dist, step, micro)).to(self.device)

    def current_lr(self) -> float:
        pos = self.pos
        return lr_at(self.plan, pos.stage_index, pos.step_in_stage, pos.step, pos.lr_scale)

    def probe_loss(self) -> float | None:
        return measures.probe_loss(self)

    def evaluate(self) -> None:
        self.evaluated_at = self.pos.step
        measures.evaluate(self)

    def checkpoint(self, reason: str) -> Path | None:
        self.pos.plateau = self.plateau.state() if self.plateau is not None else None
        self.cadence.written(self.pos.step)
        path = measures.write_trainer_checkpoint(self, reason)
        if path is not None:
            self.checkpoint_scales[self.pos.step] = self.pos.lr_scale
        return path

    def restore(self, checkpoint_dir: Path) -> None:
        """Continue from a checkpoint: same weights, optimizer, plan position and RNG, read
        and checked whole (backend/state/restore.py) before anything here changes."""
        done = restoring.read_restore(self, checkpoint_dir, trainable_groups)
        self.pos, self.plan, self.levels = done.pos, done.plan, done.levels
        restoring.adopt_threads(self, done.pos.cpu_threads)
        self.model, self.optimizer = done.model.to(self.device), None
        if done.optimizer_stage is not None:
            self.configure_training(*done.optimizer_stage)
        scaler, warn = self.steps.scaler, self.report.warn
        restoring.load_rest(done, self.model, self.optimizer, self.dist, self.device, scaler, warn)
        self.checkpoint_scales[self.pos.step] = self.pos.lr_scale
        self.plateau = trigger_for(self.stage, self.pos.plateau) if self.pos.stage_entered else None
        self.cadence = CheckpointCadence(self.plan.checkpoint)
        self.cadence.written(self.pos.step)

    def rollback(self, step: int | None, lr_scale: float | None = None) -> str:
        """Restore an earlier checkpoint in this live run; the ack text. Later checkpoints
        are set aside (backend/state/restore.py), so a later `resume` follows this timeline.
        No step while paused after an LR raise: the newest checkpoint from before it, as a
        blow-up's advice names (the cockpit's one-key rollback sends no step). `lr_scale`:
        train on at this scale instead of the checkpoint's (often the one that blew up)."""
        root = RunPaths(self.run_dir).checkpoints
        raised = self.lr_raised_at if self.loop.paused else None
        path = restoring.rollback_target(root, self.pos.step, step, raised)  # or RestoreError
        before, from_step = self.plan, self.pos.step
        restoring.load_or_refuse(self.restore, path)
        if lr_scale is not None:
            self.pos.lr_scale = lr_scale
        self.last_loss = self.lr_raised_at = None
        self.loop.next_stage()  # waiting or advancing no more; a stop stays
        moved = restoring.set_aside_later(root, step_of(path)) if self.dist.is_main else []
        if self.plan != before:
            self.replan(self.plan, 0)
        self.report.emit(restoring.restored_event(self.pos, path, from_step, len(moved)))
        hold = f"; still paused: `growcockpit ctl {self.run_dir} resume` trains on"
        return restoring.rolled_back_text(path, moved, self.pos) + hold * self.loop.paused

    def flush_steps(self) -> None:
        outcome = self.steps.flush(self)
        if outcome is not None:
            self.last_loss = outcome.loss
            self.pause_if_skipped(outcome)

    def finish(self) -> str:
        """Final evaluation at the last step unless the periodic one just ran (a run's final
        validation loss is then its own, never up to `eval_every_steps - 1` steps old) and
        the final model's samples; a stop's checkpoint; the final model written."""
        self.prefetch.close()
        self.flush_steps()
        if self.plan.metrics.eval_every_steps > 0 and self.pos.step != 0:
            if self.evaluated_at != self.pos.step:
                self.evaluate()
            measures.samples(self, final=True)  # the final model's text, also off the cadence
        status = "stopped" if self.loop.stopping else "completed"
        if self.loop.stopping:
            self.checkpoint("stop")
        final = RunPaths(self.run_dir).final
        if self.recipes.gates is not None:
            self.report.warn(self.recipes.unfinished_ramp_note(), step=self.pos.step)
        model = unsharded(self.model, self.device)  # FSDP: gathered on every rank
        finish_run(model, self.data.tokenizer, final, self.dist, self.report, status, self.pos.step)
        return status
