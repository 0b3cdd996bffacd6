"""`growcockpit.track`: watch and steer a training loop that growcockpit does not run.

The loop stays the user's; at each `step()` the tracker writes the step to the run
directory, hands over the per-layer statistics its hooks gathered, and applies the
commands that arrived on the control socket (pause blocks right there). The run
directory is the one the backend writes, so every growcockpit tool reads it unchanged.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import platform
import socket
import time
import traceback
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import Any

import torch
from torch import nn

from growcockpit.families import FAMILY_SPECS
from growcockpit.grow.model_parts import get_layers
from growcockpit.plan.types import MetricsSpec
from growcockpit.protocol.commands import CommandAck, CommandRequest, lr_scale_problem
from growcockpit.protocol.events import (
    Checkpoint,
    CommandEvent,
    Error,
    Event,
    LayerStats,
    Paused,
    Resumed,
    RunFinished,
    RunStarted,
    StageStarted,
    Step,
    WarningEvent,
)
from growcockpit.protocol.pending import PendingCommand
from growcockpit.protocol.run_notes import RunNotes, note_problem, parse_tags, write_notes
from growcockpit.protocol.safe_fs import DIR_MODE
from growcockpit.tracking.commands import HONOURED, refusal, scale_lr
from growcockpit.tracking.layer_probe import LayerProbe
from growcockpit.tracking.run_files import TrackedRunFiles, TrackError
from growcockpit.tracking.saving import SaveFn, default_save

PLAIN_LOOP = "PyTorch loop"


def family_model(model: nn.Module) -> nn.Module | None:
    """The GPT-2, BERT or Llama model in `model` (itself, or one it wraps: a LightningModule,
    a user's own module holding one), else None."""
    for module in model.modules():
        if str(getattr(getattr(module, "config", None), "model_type", "")) in FAMILY_SPECS:
            return module
    return None


def _plain_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The user's config as JSON can hold it (anything else as its text)."""
    if not config:
        return {}
    loaded = json.loads(json.dumps(dict(config), default=str))
    return loaded if isinstance(loaded, dict) else {}


def _notes(root: Path, note: str, tags: Sequence[str]) -> RunNotes:
    problem = note_problem(note)
    try:
        parsed = parse_tags(",".join(tags))
    except ValueError as exc:
        problem = str(exc)
    if problem:
        raise TrackError(f"{root}: note/tags: {problem}")
    return RunNotes(note, parsed)


def _versions() -> dict[str, str]:
    """As the backend reports them (growcockpit's from the installed metadata: the package
    root imports this module lazily, so this module does not import the root)."""
    import transformers

    try:
        own = metadata.version("growcockpit")
    except metadata.PackageNotFoundError:
        own = "unknown"
    return {
        "growcockpit": own,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "host": socket.gethostname(),
    }


class Tracker:
    """A tracked run. `step()` after each optimizer step; `close()` (or `with`) at the end.

    `step()` returns False once `stop` was accepted: end the loop then.
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
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
    ) -> None:
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.save_fn = save or default_save(model, optimizer)
        self.metrics = metrics or MetricsSpec()
        root = Path(run_dir)
        self.name = name or root.name
        self.step_count = 0
        self.stage = 0
        self.tokens = 0
        self.lr_scale = 1.0
        self.paused = False
        self.should_stop = False
        host = family_model(model)
        if layers is not None:
            blocks: list[nn.Module] | None = list(layers)
        else:
            blocks = list(get_layers(host)) if host is not None else None
        device = next((p.device for p in model.parameters()), torch.device("cpu"))
        notes = _notes(root, note, tags)  # checked before anything is written
        self.files = TrackedRunFiles(
            root, self.name, total_steps, self.metrics.system_every_s, device
        )
        if notes:  # the run's notes.json, as `growcockpit note` / `tag` write it
            write_notes(root, notes)
        plan_dict = dict(plan) if plan is not None else self._plan(blocks, total_steps)
        self.emit(
            RunStarted(
                run_id=root.name,
                plan=plan_dict,
                device=str(device),
                pid=os.getpid(),
                versions=_versions(),
                trainer=trainer,
                config=_plain_config(config),
            )
        )
        self.probe: LayerProbe | None = None
        if blocks is None:
            self.warn(
                f"per-layer stats off: {type(model).__name__} is not a GPT-2, BERT or Llama "
                "model; pass layers=[...] (its blocks) to growcockpit.track"
            )
        else:
            self.probe = LayerProbe(
                host if layers is None and host is not None else model,
                optimizer,
                layers,
                device,
                self.metrics.every_steps,
                self.metrics.timing_every_steps,
            )
            self.probe.arm(1)
        if plan is None:
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

    def emit(self, event: Event) -> Event:
        return self.files.emit(event)

    def warn(self, message: str) -> None:
        self.emit(WarningEvent(message=message, step=self.step_count))

    def current_lr(self) -> float:
        groups = self.optimizer.param_groups
        return float(groups[0]["lr"]) if groups else 0.0

    # ---- the loop's side ------------------------------------------------------------
    def step(self, loss: float | torch.Tensor | None = None, tokens: int = 0) -> bool:
        """Record the step just taken and apply the commands waiting; False: stop now.

        `loss` may be a tensor (read once here); `tokens`: how many the step trained on.
        Blocks while the run is paused."""
        now = time.perf_counter()
        elapsed, self._last = now - self._last, now
        self.step_count += 1
        self.tokens += int(tokens)
        value = float(loss.detach().float()) if isinstance(loss, torch.Tensor) else loss
        self.emit(
            Step(
                step=self.step_count,
                stage=self.stage,
                loss=math.nan if value is None else float(value),
                lr=self.current_lr(),
                tokens=self.tokens,
                tokens_per_s=tokens / elapsed if elapsed > 0 else 0.0,
                step_ms=elapsed * 1e3,
            )
        )
        if self.probe is not None:
            stats = self.probe.take()
            if stats is not None:
                self.emit(LayerStats(step=self.step_count, stage=self.stage, layers=stats))
        self.handle_commands()
        if self.probe is not None:
            self.probe.arm(self.step_count + 1)
        self._last = time.perf_counter()  # a pause is not step time
        return not self.should_stop

    def handle_commands(self) -> None:
        """Apply what arrived; while paused, wait here for more (resume or stop)."""
        for pending in self.files.control.poll():
            self._answer(pending)
        while self.paused and not self.should_stop:
            for pending in self.files.control.wait(0.5):
                self._answer(pending)

    def _answer(self, pending: PendingCommand) -> None:
        request = pending.request
        accepted, reason = self.apply(request)
        ack = CommandAck(request.id, accepted, reason, self.step_count)
        pending.reply(ack)
        self.emit(
            CommandEvent(
                id=request.id,
                command=request.command,
                args=request.args,
                accepted=accepted,
                reason=reason,
                step=self.step_count,
            )
        )

    def apply(self, request: CommandRequest) -> tuple[bool, str]:
        """(accepted, the reason shown to the user) for one command at this step boundary."""
        if self.should_stop:
            return False, "the run is stopping"
        command = request.command
        if command not in HONOURED:
            return False, refusal(command)
        if command == "pause":
            if self.paused:
                return False, "already paused"
            self.paused = True
            self.emit(Paused(step=self.step_count, reason="command"))
            return True, f"paused at step {self.step_count}"
        if command == "resume":
            if not self.paused:
                return False, "not paused"
            self.paused = False
            self.emit(Resumed(step=self.step_count))
            return True, f"resumed at step {self.step_count}"
        if command == "set_lr":
            return self.set_lr(float(request.args["factor"]))
        if command == "checkpoint":
            return self.checkpoint("command")
        accepted, saved = self.checkpoint("stop")
        self.should_stop = True
        self.paused = False
        return True, f"stopping: {saved}" if accepted else f"stopping without a checkpoint: {saved}"

    def set_lr(self, factor: float) -> tuple[bool, str]:
        problem = lr_scale_problem(self.lr_scale, factor)
        if problem:
            return False, problem
        scale_lr(self.optimizer, self.scheduler, factor)
        self.lr_scale *= factor
        return True, f"LR scale now {self.lr_scale:g} (lr {self.current_lr():.3g})"

    def checkpoint(self, reason: str) -> tuple[bool, str]:
        """Save through the save function into checkpoints/step-N/; (written, what happened)."""
        folder = self.files.paths.checkpoints / f"step-{self.step_count}"
        try:
            folder.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            self.save_fn(folder)
        except Exception as exc:  # the user's save function: reported, the loop goes on
            self.warn(f"checkpoint failed: {type(exc).__name__}: {exc}")
            return False, f"checkpoint failed: {type(exc).__name__}: {exc}"
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
        final = status or ("stopped" if self.should_stop else "completed")
        self.files.close(RunFinished(status=final, step=self.step_count, message=message))

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
    optimizer: torch.optim.Optimizer,
    config: Mapping[str, Any] | None = None,
    **options: Any,
) -> Tracker:
    """Track a training loop in `run_dir` (created; it must not hold a run already).

    Options: `name` (shown in the cockpit; the directory's name by default), `layers`
    (the model's blocks, for a model of no registered family), `scheduler` (so `set_lr`
    scales the schedule too), `save` (a function writing a checkpoint into the directory
    it gets), `total_steps` (for the progress bar), `metrics` (a `MetricsSpec` cadence),
    `note` and `tags` (the run's note and tags, as `growcockpit note` / `tag` set them).
    Raises TrackError (one line) when the directory cannot hold the run.
    """
    return Tracker(run_dir, model, optimizer, config=config, **options)


__all__ = ["PLAIN_LOOP", "TrackError", "Tracker", "track"]
