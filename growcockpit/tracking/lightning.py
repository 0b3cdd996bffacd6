"""`CockpitLightningCallback`: a Lightning run, watched and steered from the cockpit.

Built on `Tracker` like the Trainer callback: each optimizer step (Lightning's
`global_step`) goes to the run directory at `on_train_batch_end`, where the commands
waiting are applied. A checkpoint is Lightning's own (`trainer.save_checkpoint`: model,
optimizers, schedulers and loops, which `fit(ckpt_path=...)` resumes), stop is
`trainer.should_stop`, and `set_lr` scales the LR inside each optimizer step.
Validation's `val_loss` (as the module logs it) becomes `eval` events.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from torch import nn

from growcockpit.plan.types import MetricsSpec
from growcockpit.protocol.events import Eval
from growcockpit.tracking.options import TrackOptions
from growcockpit.tracking.tracker import Tracker

TRAINER = "lightning.Trainer"


def batch_tokens(batch: Any) -> int:
    """Tokens in a batch: `input_ids`' elements of a mapping, else a tensor's (first) elements."""
    if isinstance(batch, Mapping):
        ids = batch.get("input_ids")
        return ids.numel() if isinstance(ids, torch.Tensor) else 0
    if isinstance(batch, list | tuple) and batch:
        return batch_tokens(batch[0])
    return batch.numel() if isinstance(batch, torch.Tensor) else 0


def _loss_of(outputs: Any) -> torch.Tensor | None:
    loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
    return loss.detach() if isinstance(loss, torch.Tensor) else None


class LightningTracker(Tracker):
    api_name = "growcockpit.CockpitLightningCallback"


class CockpitLightningCallback(pl.Callback):
    """`Trainer(callbacks=[CockpitLightningCallback("runs/my-run")])`; `tokens` counts a
    batch's tokens (default: `batch_tokens`)."""

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        name: str | None = None,
        config: Mapping[str, Any] | None = None,
        layers: Sequence[nn.Module] | None = None,
        metrics: MetricsSpec | None = None,
        tokens: Callable[[Any], int] = batch_tokens,
    ) -> None:
        self.options = TrackOptions(Path(run_dir), name, dict(config or {}), layers, metrics)
        self.count_tokens = tokens
        self.tracker: Tracker | None = None
        self._loss: torch.Tensor | None = None
        self._batches = 0
        self._tokens = 0

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not trainer.optimizers:
            raise ValueError(
                "CockpitLightningCallback: the module configured no optimizer; "
                "return one from configure_optimizers"
            )
        schedulers = trainer.lr_scheduler_configs
        total = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else 0

        def save(folder: Path) -> None:
            trainer.save_checkpoint(folder / "lightning.ckpt")

        self.tracker = self.options.open(
            LightningTracker,
            pl_module,
            trainer.optimizers[0],
            {"max_steps": trainer.max_steps, "max_epochs": trainer.max_epochs},
            scheduler=schedulers[0].scheduler if schedulers else None,
            save=save,
            total_steps=total,
            trainer=TRAINER,
            # fit(ckpt_path=...): the run directory's log goes on from the checkpoint
            start_step=trainer.global_step or None,
            resumed_from=f"a Lightning checkpoint at step {trainer.global_step}",
        )
        self.tracker.step_count = trainer.global_step

    def on_train_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        tracker = self.tracker
        if tracker is None:
            return
        loss = _loss_of(outputs)
        if loss is not None:
            self._loss = loss.float() if self._loss is None else self._loss + loss.float()
            self._batches += 1
        self._tokens += self.count_tokens(batch)
        if trainer.global_step <= tracker.step_count:  # gradient accumulation: no step yet
            return
        tracker.step_count = trainer.global_step - 1
        mean = self._loss / self._batches if self._loss is not None else None
        tokens, self._loss, self._batches, self._tokens = self._tokens, None, 0, 0
        if not tracker.step(loss=mean, tokens=tokens):
            trainer.should_stop = True

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        loss = trainer.callback_metrics.get("val_loss")
        if self.tracker is None or trainer.sanity_checking or loss is None:
            return
        value = float(loss)
        ppl = math.exp(value) if value < 700 else math.inf
        self.tracker.emit(Eval(step=trainer.global_step, val_loss=value, val_ppl=ppl))

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.tracker is not None:
            self.tracker.close()

    def on_exception(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException
    ) -> None:
        if self.tracker is not None:
            self.tracker.crash(exception)
