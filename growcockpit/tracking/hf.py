"""`CockpitCallback`: a Hugging Face `Trainer` run, watched and steered from the cockpit.

Built on `Tracker`: at each `on_step_end` the step goes to the run directory and the
commands waiting are applied there. What only the Trainer may do is asked of it
through its `TrainerControl`: a checkpoint is the Trainer's own (`should_save`: its
`_save_checkpoint` writes `output_dir/checkpoint-N` with optimizer, scheduler and RNG
state), stop is `should_training_stop` after that save. `set_lr` scales the LR inside
each optimizer step (lr_hook.py), so the schedule goes on at the new scale. The
step loss is read from the model's own output (a forward hook), since the Trainer
hands callbacks only its logged averages.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle
from transformers import (
    TrainerCallback,
    TrainerControl,
    TrainerState,
    TrainingArguments,
)

from growcockpit.plan.types import MetricsSpec
from growcockpit.protocol.events import Checkpoint, Eval
from growcockpit.tracking.options import TrackOptions
from growcockpit.tracking.tracker import Tracker

TRAINER = "transformers.Trainer"


class LossTap:
    """The training loss and tokens of each optimizer step, from hooks on the model.

    Losses stay on the device until `take()` (one read per step); tokens are counted
    from `input_ids`' shape (padding included), which needs no read at all."""

    def __init__(self, model: nn.Module) -> None:
        self._loss: torch.Tensor | None = None
        self._batches = 0
        self.tokens = 0
        self._handles: list[RemovableHandle] = [
            model.register_forward_pre_hook(self._count, with_kwargs=True),
            model.register_forward_hook(self._keep),
        ]

    def _count(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if module.training and isinstance(ids, torch.Tensor):
            self.tokens += ids.numel()

    def _keep(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        loss = getattr(output, "loss", None)
        if module.training and isinstance(loss, torch.Tensor):
            loss = loss.detach().float()
            self._loss = loss if self._loss is None else self._loss + loss
            self._batches += 1

    def take(self) -> tuple[float | None, int]:
        """(mean loss of the step's micro-batches, tokens) since the last call."""
        loss = float(self._loss) / self._batches if self._loss is not None else None
        out = (loss, self.tokens)
        self._loss, self._batches, self.tokens = None, 0, 0
        return out

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


class TrainerTracker(Tracker):
    """A `Tracker` whose checkpoints are the Trainer's own, asked for through its control."""

    api_name = "growcockpit.CockpitCallback (or GrowthCallback)"
    control: TrainerControl | None = None
    output_dir = ""
    save_reason: str | None = None

    def checkpoint(self, reason: str) -> tuple[bool, str]:
        if self.control is None:
            return False, "the Trainer has not reached a step boundary yet"
        self.control.should_save = True
        self.save_reason = reason
        folder = Path(self.output_dir) / f"checkpoint-{self.step_count}"
        when = (
            "once resumed (the Trainer saves as a step ends)"
            if self.paused
            else "as this step ends"
        )
        return True, f"the Trainer saves {folder} {when}"


def _training_args(args: TrainingArguments) -> dict[str, Any]:
    try:
        as_dict: Any = args.to_dict  # unannotated in transformers
        return dict(as_dict())
    except Exception:  # an unusual argument class: its text is still worth keeping
        return {"repr": repr(args)}


class CockpitCallback(TrainerCallback):
    """`Trainer(..., callbacks=[CockpitCallback("runs/my-run")])`: the run appears in the
    cockpit, and `growcockpit ctl runs/my-run pause|resume|set_lr F|checkpoint|stop` steer it."""

    trainer_name = TRAINER

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        name: str | None = None,
        config: Mapping[str, Any] | None = None,
        layers: Sequence[nn.Module] | None = None,
        metrics: MetricsSpec | None = None,
    ) -> None:
        self.options = TrackOptions(Path(run_dir), name, dict(config or {}), layers, metrics)
        self.tracker: TrainerTracker | None = None
        self.tap: LossTap | None = None

    def plan_dict(self, model: nn.Module, state: TrainerState) -> dict[str, Any] | None:
        """The plan the run's events carry (None: the tracker's one-stage description)."""
        return None

    def on_train_begin(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: nn.Module | None = None,
        optimizer: torch.optim.Optimizer | None = None,
        lr_scheduler: Any = None,
        **kwargs: Any,
    ) -> None:
        if model is None or optimizer is None:
            raise ValueError(
                "CockpitCallback: the Trainer gave no model or optimizer at on_train_begin; "
                "pass the callback to Trainer(callbacks=[...]) rather than calling it yourself"
            )
        self.tracker = self.options.open(
            TrainerTracker,
            model,
            optimizer,
            {"training_args": _training_args(args)},
            scheduler=lr_scheduler,
            total_steps=state.max_steps,
            trainer=self.trainer_name,
            plan=self.plan_dict(model, state),
            # resume_from_checkpoint: the run directory's log goes on from the checkpoint
            start_step=state.global_step or None,
            resumed_from=f"a Trainer checkpoint at step {state.global_step}",
        )
        self.tracker.output_dir = args.output_dir or ""
        self.tracker.step_count = state.global_step  # a resumed Trainer counts on
        self.tap = LossTap(model)

    def on_step_end(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        **kwargs: Any,
    ) -> None:
        tracker, tap = self.tracker, self.tap
        if tracker is None or tap is None:
            return
        tracker.control = control
        tracker.step_count = state.global_step - 1
        loss, tokens = tap.take()
        if not tracker.step(loss=loss, tokens=tokens):
            control.should_training_stop = True

    def on_evaluate(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        metrics: Mapping[str, float] | None = None,
        **kwargs: Any,
    ) -> None:
        loss = (metrics or {}).get("eval_loss")
        if self.tracker is None or not isinstance(loss, int | float):
            return
        ppl = math.exp(loss) if loss < 700 else math.inf
        self.tracker.emit(Eval(step=state.global_step, val_loss=float(loss), val_ppl=ppl))

    def on_save(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        **kwargs: Any,
    ) -> None:
        tracker = self.tracker
        if tracker is None:
            return
        folder = Path(args.output_dir or "") / f"checkpoint-{state.global_step}"
        reason, tracker.save_reason = tracker.save_reason or "periodic", None
        tracker.emit(Checkpoint(step=state.global_step, path=str(folder), reason=reason))

    def on_train_end(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        **kwargs: Any,
    ) -> None:
        if self.tap is not None:
            self.tap.close()
        if self.tracker is not None:
            self.tracker.step_count = state.global_step
            self.tracker.close()
