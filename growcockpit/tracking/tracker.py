"""`growcockpit.track`: watch and steer a training loop that growcockpit does not run.

The loop stays the user's; at each `step()` the tracker writes the step to the run
directory, hands over the per-layer statistics its hooks gathered, judges the loss (the
engine's NaN / spike guard) and applies the commands that arrived on the control socket
(pause blocks right there). The LR scale lives in an optimizer step hook, so a loop that
sets its own LR every iteration still trains at the scale the cockpit set. The run
directory is the one the backend writes, so every growcockpit tool reads it unchanged.
"""

from __future__ import annotations

import atexit
import math
import os
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import torch
from torch import nn

from growcockpit.grow.model_parts import get_layers
from growcockpit.plan.types import MetricsSpec
from growcockpit.protocol.events import (
    Checkpoint,
    Error,
    Event,
    LayerStats,
    RolledBack,
    RunFinished,
    RunStarted,
    StageStarted,
    Step,
    WarningEvent,
)
from growcockpit.protocol.run_notes import write_notes
from growcockpit.protocol.safe_fs import DIR_MODE
from growcockpit.tracking.commands import CommandDesk
from growcockpit.tracking.console import ConsoleCopy, copy_console
from growcockpit.tracking.guard import LossGuard, advice
from growcockpit.tracking.layer_probe import LayerProbe
from growcockpit.tracking.logged import LogDesk
from growcockpit.tracking.lr_hook import LrFactorHook
from growcockpit.tracking.ranks import QuietFiles, detect, gather_memory
from growcockpit.tracking.run_files import TrackedRunFiles, TrackError
from growcockpit.tracking.run_info import (
    family_model,
    plain_config,
    run_notes,
    tokens_at,
    versions,
)
from growcockpit.tracking.saving import SaveFn, default_save

PLAIN_LOOP = "PyTorch loop"


class Tracker:
    """A tracked run. `step()` after each optimizer step; `close()` (or `with`) at the end.

    `step()` returns False once `stop` was accepted: end the loop then.
    """

    api_name = "growcockpit.track"  # where the user passes options (a callback: its class)

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        model: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        *,
        config: Mapping[str, Any] | None = None,
        name: str | None = None,
        layers: Sequence[nn.Module] | None = None,
        scheduler: Any = None,
        save: SaveFn | None = None,
        total_steps: int = 0,
        metrics: MetricsSpec | None = None,
        trainer: str = PLAIN_LOOP,
        plan: Mapping[str, Any] | None = None,
        note: str = "",
        tags: Sequence[str] = (),
        start_step: int | None = None,
        resumed_from: str | None = None,
        guard: bool = True,
        console: bool = True,
    ) -> None:
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.save_fn = save or default_save(model, optimizer)
        self.metrics = metrics or MetricsSpec()
        root = Path(run_dir)
        self.name = name or root.name
        if start_step is not None and (isinstance(start_step, bool) or start_step < 0):
            raise TrackError(
                f"{root}: start_step={start_step!r}: pass the steps already done (≥ 0)"
            )
        self.step_count = start_step or 0
        self.stage = 0
        self.tokens = 0
        self.schedule_factor = 1.0  # a GrowthCallback's re-warm-up, on top of the scale
        self.last_checkpoint: int | None = None
        self.last_loss: float | None = None  # the last step's (a GrowthCallback's plateau)
        self.logs = LogDesk(self.emit, self.warn, lambda: (self.step_count, self.stage))
        host = family_model(model)
        if layers is not None:
            blocks: list[nn.Module] | None = list(layers)
        else:
            blocks = list(get_layers(host)) if host is not None else None
        device = next((p.device for p in model.parameters()), torch.device("cpu"))
        notes = run_notes(root, note, tags)  # checked before anything is written
        self.ranks = detect(device)  # under torchrun: rank 0 writes, every rank obeys
        self._device, self._calls = device, 0
        writer = self.ranks is None or self.ranks.writer
        self.files: TrackedRunFiles | QuietFiles = (
            TrackedRunFiles(
                root,
                self.name,
                total_steps,
                self.metrics.system_every_s,
                device,
                resume=start_step is not None,
            )
            if writer
            else QuietFiles(root)
        )
        self.lr_hook = LrFactorHook(optimizer, lambda: self.lr_scale * self.schedule_factor)
        self.commands = CommandDesk(
            self.files,
            self.ranks,
            self.lr_hook,
            emit=self.emit,
            checkpoint=self.checkpoint,
            current_lr=self.current_lr,
            step=lambda: self.step_count,
        )
        judge = guard and writer  # rank 0 judges; its pause reaches every rank
        self.guard = LossGuard(self.metrics.spike_window, self.metrics.spike_z) if judge else None
        self._cut_at: int | None = None  # a resume: cut the plots before the first new step
        if notes and writer:  # the run's notes.json, as `growcockpit note` / `tag` write it
            write_notes(root, notes)
        plan_dict = dict(plan) if plan is not None else self._plan(blocks, total_steps)
        resumed = self.files.resumed or bool(start_step)
        self.emit(
            RunStarted(
                run_id=root.name,
                plan=plan_dict,
                device=str(device),
                world_size=self.ranks.world if self.ranks is not None else 1,
                pid=os.getpid(),
                versions=versions() if writer else {},  # rank 0's alone is written
                resumed_from=(resumed_from or f"step {self.step_count}") if resumed else None,
                trainer=trainer,
                config=plain_config(config),
            )
        )
        if self.files.resumed:
            self._cut_at = self.step_count
        self.console: ConsoleCopy | None = (
            copy_console(self.files.paths.log) if console and writer else None
        )
        self.probe: LayerProbe | None = None
        if not writer:
            pass  # rank 0 reports the per-layer stats
        elif blocks is None:
            self.warn(
                f"per-layer stats off: {type(model).__name__} is not a GPT-2, BERT or Llama "
                f"model; pass layers=[...] (its blocks) to {self.api_name}"
            )
        elif optimizer is not None:
            self.probe = LayerProbe(
                host if layers is None and host is not None else model,
                optimizer,
                layers,
                device,
                self.metrics.every_steps,
                self.metrics.timing_every_steps,
            )
            self.probe.arm(self.step_count + 1)
        if plan is None and not self.files.resumed:
            self.emit(self._stage_started(blocks, total_steps))
        self.files.start_sampler()
        atexit.register(self._at_exit)
        self._last = time.perf_counter()

    # ---- what the run directory says about the run -------------------------------
    def _plan(self, blocks: list[nn.Module] | None, total_steps: int) -> dict[str, Any]:
        m = self.metrics
        return {
            "name": self.name,
            "description": "a tracked run: the user's own training loop",
            "metrics": {
                "every_steps": m.every_steps,
                "timing_every_steps": m.timing_every_steps,
                "system_every_s": m.system_every_s,
            },
            "stages": [{"name": "train", "layers": len(blocks or ()), "steps": total_steps}],
        }

    def _stage_started(self, blocks: list[nn.Module] | None, total_steps: int) -> StageStarted:
        trainable = [
            i for i, b in enumerate(blocks or ()) if any(p.requires_grad for p in b.parameters())
        ]
        return StageStarted(
            index=0,
            name="train",
            layers=len(blocks or ()),
            trainable_layers=trainable,
            operator="init",
            steps=total_steps,
            reason="init",
        )

    # ---- the steering state, owned by the command desk --------------------------------
    @property
    def paused(self) -> bool:
        return self.commands.paused

    @property
    def should_stop(self) -> bool:
        """True once `stop` was accepted: end the loop."""
        return self.commands.should_stop

    @property
    def lr_scale(self) -> float:
        """The product of the accepted `set_lr` factors."""
        return self.commands.lr_scale

    # ---- the loop's own metrics (logged.py) ---------------------------------------------
    def log(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Any scalars of yours at `step` (default: the last step); never raises."""
        self.logs.log(metrics, step)

    def eval(self, val_loss: Any = None, step: int | None = None, **metrics: Any) -> None:
        """An evaluation at `step`: `eval(val_loss=2.1, accuracy=.6)`; never raises."""
        self.logs.eval(val_loss, step, **metrics)

    def tell(self, message: str, once: str | None = None) -> None:
        """One line to the script's stderr and the run's events (once per `once` key)."""
        self.logs.tell(message, once)

    def emit(self, event: Event) -> Event:
        return self.files.emit(event)

    def warn(self, message: str) -> None:
        self.emit(WarningEvent(message=message, step=self.step_count))

    def current_lr(self) -> float:
        """The LR the optimizer uses at its next step (the cockpit's scale included)."""
        return self.lr_hook.current()

    # ---- the loop's side ------------------------------------------------------------
    def step(
        self,
        loss: float | torch.Tensor | None = None,
        tokens: int = 0,
        *,
        step: int | None = None,
    ) -> bool:
        """Record the step just taken and apply the commands waiting; False: stop now.

        `loss` may be a tensor (read once here); `tokens`: how many the step trained on;
        `step`: your loop's own number for it (default: one more than the last).
        Blocks while the run is paused, and pauses on a non-finite or spiking loss."""
        now = time.perf_counter()
        elapsed, self._last = now - self._last, now
        self.step_count = self.step_count + 1 if step is None else int(step)
        if self._cut_at is not None:  # a resumed loop: what the old run did past here goes
            cut, self._cut_at = min(self._cut_at, self.step_count - 1), None
            self.tokens = tokens_at(self.files.paths.events, cut)
            self.emit(RolledBack(step=cut, stage=self.stage, tokens=self.tokens))
        tokens = int(tokens) * (self.ranks.world if self.ranks is not None else 1)  # the job's
        self.tokens += tokens
        value = float(loss.detach().float()) if isinstance(loss, torch.Tensor) else loss
        self.last_loss = None if value is None else float(value)
        used = self.lr_hook.used
        self.lr_hook.used = None
        self.emit(
            Step(
                step=self.step_count,
                stage=self.stage,
                loss=math.nan if value is None else float(value),
                lr=used if used is not None else self.current_lr(),
                tokens=self.tokens,
                tokens_per_s=tokens / elapsed if elapsed > 0 else 0.0,
                step_ms=elapsed * 1e3,
            )
        )
        if self.probe is not None:
            stats = self.probe.take()
            if stats is not None:
                self.emit(LayerStats(step=self.step_count, stage=self.stage, layers=stats))
        if self.ranks is not None:
            self._calls += 1  # counted alike on every rank, whatever numbers step= gives
            every = self.metrics.every_steps
            if every > 0 and self._calls % every == 0:
                where = (self.step_count, self.stage)
                memory = gather_memory(self.ranks, self.model, self.optimizer, self._device, where)
                if memory is not None:
                    self.emit(memory)
        if self.guard is not None and not self.should_stop:
            self._judge(None if value is None else float(value))
        self.commands.handle()
        if self.probe is not None:
            self.probe.arm(self.step_count + 1)
        self._last = time.perf_counter()  # a pause is not step time
        return not self.should_stop

    def _judge(self, loss: float | None) -> None:
        """The engine's guard: a non-finite or spiking loss pauses the loop right here."""
        assert self.guard is not None
        bad = self.guard.check(loss, self.step_count)
        if bad is None or self.paused:
            return
        reason, what = bad
        run = str(self.files.paths.root)
        message = f"{what}: paused; {advice(run, self.last_checkpoint)}"
        self.emit(Error(message=message, step=self.step_count))
        self.commands.pause(reason)
        print(
            f"growcockpit: {message} (track(..., guard=False) turns this guard off)",
            file=sys.stderr,
            flush=True,
        )

    def checkpoint(self, reason: str) -> tuple[bool, str]:
        """Save through the save function into checkpoints/step-N/; (written, what happened)."""
        folder = self.files.paths.checkpoints / f"step-{self.step_count}"
        try:
            folder.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            self.save_fn(folder)
        except Exception as exc:  # the user's save function: reported, the loop goes on
            self.warn(f"checkpoint failed: {type(exc).__name__}: {exc}")
            return False, f"checkpoint failed: {type(exc).__name__}: {exc}"
        self.last_checkpoint = self.step_count
        self.emit(Checkpoint(step=self.step_count, path=str(folder), reason=reason))
        return True, f"checkpoint written: {folder}"

    # ---- the end ----------------------------------------------------------------------
    def close(self, status: str | None = None, message: str = "") -> None:
        """End the run: `completed`, or `stopped` after a stop command (idempotent)."""
        if self.files.closed:
            return
        atexit.unregister(self._at_exit)
        if self.probe is not None:
            self.probe.close()
        self.lr_hook.close()
        final = status or ("stopped" if self.should_stop else "completed")
        self.files.close(RunFinished(status=final, step=self.step_count, message=message))
        if self.console is not None:
            self.console.close()

    def _at_exit(self) -> None:
        """The interpreter ends with the run still open: an exception ended the loop (the
        Trainer calls no callback then), or close() was never called. Never left live."""
        self.close(
            "crashed", "the process ended without closing the run (an exception, or no close())"
        )

    def crash(self, exc: BaseException) -> None:
        tb = "".join(traceback.format_exception(exc))[-4000:]
        message = f"{type(exc).__name__}: {exc}"
        self.emit(Error(message=message, traceback=tb, step=self.step_count))
        self.close("crashed", message)

    def __enter__(self) -> Tracker:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self.close()
        elif isinstance(exc, KeyboardInterrupt):
            self.close("stopped", "interrupted (Ctrl-C)")
        else:
            self.crash(exc)


def track(
    run_dir: str | os.PathLike[str],
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    config: Mapping[str, Any] | None = None,
    **options: Any,
) -> Tracker:
    """Track a training loop in `run_dir` (created; it must not hold a run already, unless
    `start_step` resumes it).

    Options: `name` (shown in the cockpit; the directory's name by default), `layers`
    (the model's blocks, for a model of no registered family), `save` (a function writing
    a checkpoint into the directory it gets), `total_steps` (for the progress bar),
    `metrics` (a `MetricsSpec` cadence and spike limits), `note` and `tags` (the run's
    note and tags), `start_step` (the steps already done: a resumed loop appends to its
    run directory), `resumed_from` (what it resumed, in words), `guard` (False: no pause
    on a NaN or spiking loss), `console` (False: the script's output is not copied into
    the run's backend.log). Raises TrackError (one line) when the directory cannot hold
    the run.
    """
    return Tracker(run_dir, model, optimizer, config=config, **options)


__all__ = ["PLAIN_LOOP", "TrackError", "Tracker", "track"]
