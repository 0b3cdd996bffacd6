"""Weights & Biases mirror in offline mode: `runs/<id>/wandb/offline-run-*/`.

Offline runs need no account or network; `wandb sync runs/<id>/wandb/offline-run-*`
uploads one later. W&B keeps one row per step and refuses steps that go
back, so after a resume (the run returns to its checkpoint's step) the
replayed steps are skipped until the run passes its last logged step.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import wandb

from growcockpit.export.records import Recorder
from growcockpit.protocol.events import Event, RunStarted


class WandbMirror:
    def __init__(self, run_dir: Path, run_name: str, config: dict[str, Any] | None = None) -> None:
        os.environ.setdefault("WANDB_SILENT", "true")
        self._run = wandb.init(
            mode="offline",
            dir=str(run_dir),
            project="growcockpit",
            name=run_name,
            config=config or {},
            settings=wandb.Settings(silent=True, console="off", x_disable_stats=True),
        )
        self._recorder = Recorder()
        self._last = -1

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted) and event.plan:
            self._run.config.update({"plan": event.plan}, allow_val_change=True)  # type: ignore[no-untyped-call]
        rec = self._recorder.record(event)
        if rec is None or rec.step < self._last:
            return
        self._last = rec.step
        self._run.log({**rec.scalars, **rec.texts}, step=rec.step)

    def close(self) -> None:
        self._run.finish()
