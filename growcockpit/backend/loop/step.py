"""One optimizer step: micro-batches, clip, a guarded update, and what the step cost.

Two rules make the step cheap on a GPU, where the host must stay ahead of the device:

* **One host read per reported step, none otherwise.** The loss, the count of
  skipped updates and the gradient norm stay on the device (`StepWindow`, step_window.py) and
  are read in one transfer every `metrics.log_every_steps` steps (and at the
  last step of a stage). Default 1: every step reports, as on CPU before.
* **A non-finite loss or gradient skips the update on the device.** The
  finiteness flag goes to the optimizer as `found_inf` (fused AdamW and our
  LAMB skip the whole update, step count included, without a sync; the engine
  fuses AdamW on CUDA and the CPU). Optimizers without that support (a non-fused
  AdamW) are guarded by a host check. The run then pauses at the next read
  (`Trainer.after_step`), weights unchanged and finite.
* **A loss spike skips the update the same way.** The spike sentinel
  (backend/loop/sentinel.py: a robust z-score of the loss, and of the gradient norm
  if asked, against the last `metrics.spike_window` steps) is judged on the
  device and folded into that flag, so the spiking update never reaches the
  weights and costs no extra read; the first spike of a window is read with it.

Phase times (fwd / bwd / opt) come from `StepTimer`, measured around the
phases rather than woven through them: CUDA events on CUDA, read after the
step's one read has synchronised; `perf_counter` on CPU.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn
from torch.distributed.tensor import DTensor

from growcockpit.backend.data.blocks import Batch
from growcockpit.backend.loop.block_compile import BlockCompiler
from growcockpit.backend.loop.layer_checks import LayerHealth
from growcockpit.backend.loop.optim import guarded_step, set_lr
from growcockpit.backend.loop.precision import autocast as autocast
from growcockpit.backend.loop.precision import resolve_precision as resolve_precision
from growcockpit.backend.loop.sentinel import (
    SpikeCheck,
    SpikeSentinel,
    finite,
    judge,
    passed,
    scalar,
)
from growcockpit.backend.loop.step_timer import StepTimer as StepTimer
from growcockpit.backend.loop.step_window import StepOutcome, StepWindow
from growcockpit.backend.loop.trainer_reads import TrainerReads
from growcockpit.backend.parallel.distributed import DistContext, no_sync
from growcockpit.grow import get_layers
from growcockpit.metrics import LayerStatsSampler, LayerTimer
from growcockpit.plan.types import Plan, Stage
from growcockpit.protocol.events import LayerStats, Step


class StepHost(TrainerReads, Protocol):
    """What a step reads of the trainer that runs it (backend/loop/engine.py's `Trainer`):
    read-only, since the step returns what changes (`StepResult`) and the engine applies it."""

    @property
    def train_module(self) -> nn.Module: ...

    @property
    def stats(self) -> LayerStatsSampler: ...

    @property
    def health(self) -> LayerHealth: ...

    @property
    def timer(self) -> LayerTimer: ...

    @property
    def stage(self) -> Stage: ...

    def batch(self, step: int, micro: int = 0) -> Batch: ...

    @property
    def fsdp(self) -> bool: ...

    def current_lr(self) -> float: ...

    def use_compiler(self, compiler: BlockCompiler) -> None:
        """Hand the run's compiler to the stage's forward (the trainer owns the forward)."""


def batch_index(plan: Plan, dist: DistContext, step: int, micro: int) -> int:
    """The index of micro-batch `micro` of global step `step` on this rank: batches are a
    pure function of it (backend/data/blocks.py), so a resumed run reads the same ones."""
    return (step * plan.optim.grad_accum_steps + micro) * dist.world_size + dist.rank


def stats_due(t: StepHost) -> bool:
    """Whether the coming step samples per-layer statistics (rank 0, not under FSDP)."""
    every = t.plan.metrics.every_steps
    return not t.fsdp and t.dist.is_main and every > 0 and (t.pos.step + 1) % every == 0


def timing_due(t: StepHost) -> bool:
    """Whether the coming step times each layer (rank 0, not under FSDP)."""
    every = t.plan.metrics.timing_every_steps
    return not t.fsdp and t.dist.is_main and every > 0 and (t.pos.step + 1) % every == 0


@dataclass(frozen=True)
class StepResult:
    """What one step changed that the trainer owns: its outcome (on a reported step) and
    the tokens it trained on every rank (the engine advances the position by them)."""

    outcome: StepOutcome | None
    tokens: int


class StepRunner:
    """The training step and the state it keeps between steps (precision, scaler, window,
    the per-layer timings not yet reported)."""

    def __init__(self, precision: str, device: torch.device) -> None:
        self.device = device
        self.precision = resolve_precision(precision, device)
        self.scaler = (
            torch.amp.GradScaler("cuda")
            if self.precision == "fp16" and device.type == "cuda"
            else None
        )
        self.timer = StepTimer(device)
        self.window = StepWindow(device)
        self.sentinel: SpikeSentinel | None = None  # built at the first stage (plan's keys)
        self.compile_s: float | None = None
        self.compiler: BlockCompiler | None = None  # optim.compile, built at the first stage
        self.layer_ms: tuple[list[float | None], list[float | None]] = ([], [])

    def enter(self, t: StepHost) -> None:
        """A new trainable set (stage entry, resume, rollback): the spike windows start
        empty (another model, another loss level) and the step module is compiled."""
        m = t.plan.metrics
        self.sentinel = SpikeSentinel(m.spike_window, m.spike_z, m.spike_grad_z, self.device)
        self.compile(t)

    def compile(self, t: StepHost) -> None:
        """`optim.compile`: the stage's blocks run their compiled forwards
        (backend/loop/block_compile.py), warmed up now, after the operator.

        One compiler lives for the whole run, so a stage whose blocks have the
        shapes and guards of earlier ones reuses their graphs. The warm-up is one
        forward and backward on the stage's first batch with the random state put
        back and the gradients dropped: what compiling there is lands in
        `stage_started.compile_s` instead of the first step, and training is unchanged.
        """
        self.compile_s = None
        if not t.plan.optim.compile:
            return
        with t.report.startup.phase("compile"):
            self.warm_compiled(t)

    def warm_compiled(self, t: StepHost) -> None:
        """The stage's first forward and backward through the compiled blocks, undone."""
        if self.compiler is None:  # torch._dynamo's import (seconds) counts as compiling
            self.compiler = BlockCompiler(t.plan.optim.compile_backend)
        t.use_compiler(self.compiler)
        started = time.perf_counter()
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            batch = t.batch(t.pos.step, 0)
            with self.autocast():
                loss = t.train_module(batch.input_ids, batch.labels, batch.picked)
            if loss.requires_grad:
                loss.backward()
        if t.optimizer is not None:
            t.optimizer.zero_grad(set_to_none=True)
        t.model.zero_grad(set_to_none=True)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.compile_s = time.perf_counter() - started

    def autocast(self) -> contextlib.AbstractContextManager[None]:
        return autocast(self.precision, self.device)

    def reports(self, t: StepHost) -> bool:
        """Whether the coming step is read and reported (the same answer on every rank)."""
        every = max(1, t.plan.metrics.log_every_steps)
        last_of_stage = t.pos.step_in_stage + 1 >= t.stage.steps
        return last_of_stage or (t.pos.step + 1) % every == 0

    def run(self, t: StepHost, report_now: bool = False) -> StepResult:
        """One optimizer step of `t`: accumulate micro-batches, clip, guarded update, report
        (at the cadence, or now if `report_now`: a launch's first step). The events name the
        position after the step; the engine moves `t.pos` there (`StepResult.tokens`)."""
        optimizer = t.optimizer
        assert optimizer is not None
        accum = t.plan.optim.grad_accum_steps
        report = report_now or self.reports(t)
        layer_timing, collect = timing_due(t), stats_due(t)
        if layer_timing:
            t.timer.attach(get_layers(t.model))
        lr = t.current_lr()
        set_lr(optimizer, lr)
        self.timer.start(enabled=report)
        window = self.window
        losses: list[torch.Tensor] = []
        tokens = 0
        t_start = time.perf_counter()
        for micro in range(accum):
            t0 = time.perf_counter()
            batch = t.batch(t.pos.step, micro)
            tokens += batch.tokens
            window.data_s += time.perf_counter() - t0
            sync = no_sync(t.train_module, last=micro == accum - 1)
            with self.timer.phase("fwd"), sync, self.autocast():
                loss = t.train_module(batch.input_ids, batch.labels, batch.picked)
            with self.timer.phase("bwd"):
                if loss.requires_grad:
                    scaled = loss / accum if accum > 1 else loss
                    (self.scaler.scale(scaled) if self.scaler else scaled).backward()
            losses.append(loss.detach().float())
        if layer_timing:
            t.timer.backward_done()
        # one micro-batch (the usual case): its loss as it is, no accumulator (fewer kernels)
        mean_loss = losses[0] if accum == 1 else torch.stack(losses).mean()
        with self.timer.phase("opt"):
            grad_norms, norm, ok, checks = self.update(t, optimizer, mean_loss, collect)
        window.add(mean_loss, norm, ok, checks)
        window.steps += 1
        window.tokens += tokens
        outcome = None
        if report:
            outcome = self.read(t.pos.step + 1)
            window.phases = self.timer.read()
        window.host_s += time.perf_counter() - t_start
        if layer_timing:
            t.timer.detach()
        if t.timer.pending and (outcome is not None or collect):  # read already synchronised
            self.layer_ms = t.timer.result()
        trained = tokens * t.dist.world_size
        step, total = t.pos.step + 1, t.pos.tokens + trained  # the position after this step
        if outcome is not None:
            outcome.loss = self.emit_step(t, outcome.loss, lr, step, total)
        if collect:
            fwd_ms, bwd_ms = self.layer_ms
            self.layer_ms = ([], [])  # each timing sample is reported once, never again stale
            layers = t.stats.collect(grad_norms, fwd_ms, bwd_ms)
            t.report.emit(LayerStats(step=step, stage=t.pos.stage_index, layers=layers))
            t.health.observe(layers, t.plan.metrics, t.stage, t.pos.stage_index, step)
        return StepResult(outcome, trained)

    def read(self, last_step: int) -> StepOutcome:
        """The window's one read. After a spike the sentinel starts afresh, under a ceiling
        (sentinel.py): the run pauses there, and a `resume` (not a rollback) says the new
        level is expected."""
        outcome = self.window.read(last_step)
        spike, sentinel = outcome.spike, self.sentinel
        if spike is not None and sentinel is not None:
            watched = sentinel.loss if spike.signal == "loss" else sentinel.grad
            spike.limit, spike.window = watched.limit, watched.size
            spike.ceiling = watched.refilling and watched.count < watched.size
            sentinel.refill()
        return outcome

    def discard(self) -> None:
        """Forget the unreported steps (a rollback abandoned them)."""
        self.window = StepWindow(self.device)

    def flush(self, t: StepHost) -> StepOutcome | None:
        """Report the steps run since the last report, if any (before a stage change or stop)."""
        w = self.window
        if w.steps == 0 or w.loss is None:
            return None
        outcome = self.read(t.pos.step)
        w.phases = {}
        outcome.loss = self.emit_step(t, outcome.loss, t.current_lr(), t.pos.step, t.pos.tokens)
        return outcome

    def update(
        self,
        t: StepHost,
        optimizer: torch.optim.Optimizer,
        loss: torch.Tensor,
        collect: bool,
    ) -> tuple[
        list[float | None], torch.Tensor, torch.Tensor, tuple[SpikeCheck, SpikeCheck] | None
    ]:
        """Unscale, clip, and step unless the loss or gradient is non-finite or spiked.

        Returns (per-layer grad norms if collected, total grad norm, update flag, the spike
        sentinel's verdicts if it watches), on the device.
        """
        params = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        grad_norms: list[float | None] = []
        loss_ok = finite(loss)
        if not params:
            return grad_norms, torch.zeros((), device=self.device), loss_ok, None
        if self.scaler:
            self.scaler.unscale_(optimizer)
        if collect:
            grad_norms = t.stats.before_update()
        clip = t.plan.optim.grad_clip
        if clip > 0:
            norm = torch.nn.utils.clip_grad_norm_(params, clip)
        else:
            norm = torch.nn.utils.get_total_norm([p.grad for p in params])
        if isinstance(norm, DTensor):  # FSDP: the norm over every rank's shards, whole
            norm = norm.full_tensor()
        norm = norm.to(self.device)
        # under DDP the all-reduced gradient norm is the same on every rank: so is the skip
        norm_ok = finite(norm) if t.dist.enabled else finite(norm) & loss_ok
        checks = judge(self.sentinel, loss, norm, norm_ok, t.dist.world_size)
        spike_ok = passed(checks) if checks else None
        if self.scaler:
            # fp16: the scaler skips overflowing steps and lowers its scale (normal, no pause);
            # a spike is skipped by a host check here (the scaler takes no device flag of ours)
            if spike_ok is None or bool(spike_ok):
                self.scaler.step(optimizer)
            self.scaler.update()
            ok = loss_ok if spike_ok is None else loss_ok & spike_ok
        else:
            ok = norm_ok if spike_ok is None else norm_ok & spike_ok
            guarded_step(optimizer, ok)
        optimizer.zero_grad(set_to_none=True)
        return grad_norms, scalar(norm), ok, checks

    def emit_step(self, t: StepHost, loss: float, lr: float, step: int, tokens: int) -> float:
        """The Step event for the window that just ended at `step` (`tokens` trained by
        then); returns the loss (mean over ranks).

        `loss` is the reported step's; `step_ms`, `data_ms` and `tokens_per_s` are
        averaged over every step since the last report (host wall time: on a GPU
        the unreported steps only queue work, and the read waits for all of it);
        fwd/bwd/opt are the reported step's own phases.
        """
        w = self.window
        step_s = w.host_s / max(1, w.steps)
        loss, rank_ms = t.dist.step_summary(loss, step_s * 1e3, self.device)
        per_step = w.phases
        t.report.emit(
            Step(
                step=step,
                stage=t.pos.stage_index,
                loss=loss,
                lr=lr,
                tokens=tokens,
                tokens_per_s=w.tokens * t.dist.world_size / w.host_s if w.host_s > 0 else 0.0,
                step_ms=step_s * 1e3,
                data_ms=w.data_s / max(1, w.steps) * 1e3,
                fwd_ms=per_step.get("fwd", 0.0),
                bwd_ms=per_step.get("bwd", 0.0),
                opt_ms=per_step.get("opt", 0.0),
                rank_step_ms=rank_ms,
            )
        )
        w.reset_clock()
        return loss
