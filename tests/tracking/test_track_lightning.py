"""A tiny Lightning run with `CockpitLightningCallback`, steered with `growcockpit ctl`."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from run_fixtures import of_type, wait_events
from test_track_loop import ctl
from tiny_models import batch, tiny_gpt2

import growcockpit
from growcockpit.protocol import read_all
from growcockpit.protocol.events import Checkpoint, Eval, LayerStats, RunFinished, RunStarted, Step

pytestmark = pytest.mark.slow


class TinyLM(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.model = tiny_gpt2()

    def training_step(self, ids: torch.Tensor, batch_idx: int) -> torch.Tensor:
        loss: torch.Tensor = self.model(input_ids=ids, labels=ids).loss
        return loss

    def validation_step(self, ids: torch.Tensor, batch_idx: int) -> None:
        self.log("val_loss", self.model(input_ids=ids, labels=ids).loss)

    def configure_optimizers(self) -> Any:
        opt = torch.optim.AdamW(self.parameters(), lr=1e-3)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def _loader(n: int) -> torch.utils.data.DataLoader[torch.Tensor]:
    torch.manual_seed(1)
    return torch.utils.data.DataLoader([batch(1)[0] for _ in range(n)], batch_size=4)


def _trainer(run: Path, root: Path, **options: Any) -> pl.Trainer:
    return pl.Trainer(
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(root),
        callbacks=[growcockpit.CockpitLightningCallback(run, layers=None)],
        **options,
    )


def test_ctl_steers_a_lightning_run(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "pl"
    module = TinyLM()
    trainer = _trainer(run, tmp_path, max_steps=100_000, limit_val_batches=0)
    done = threading.Event()
    thread = threading.Thread(
        target=lambda: (trainer.fit(module, _loader(64)), done.set()), daemon=True
    )
    thread.start()
    wait_events(run, lambda evs: len(of_type(evs, Step)) >= 3, timeout=90)
    assert ctl(run, "pause").returncode == 0
    held = trainer.global_step
    time.sleep(0.6)
    assert trainer.global_step == held
    assert ctl(run, "set_lr", "0.5").returncode == 0
    assert ctl(run, "checkpoint").returncode == 0
    assert ctl(run, "rollback").returncode != 0
    assert ctl(run, "resume").returncode == 0
    wait_events(run, lambda evs: of_type(evs, Step)[-1].step > held + 3, timeout=60)
    assert of_type(read_all(run / "events.jsonl"), Step)[-1].lr == pytest.approx(5e-4)
    saved = of_type(read_all(run / "events.jsonl"), Checkpoint)[0]
    assert (Path(saved.path) / "lightning.ckpt").is_file()
    assert ctl(run, "stop").returncode == 0
    assert done.wait(60), "Lightning did not stop"
    assert of_type(read_all(run / "events.jsonl"), RunFinished)[-1].status == "stopped"
    assert json.loads((run / "status.json").read_text())["state"] == "stopped"


def test_a_lightning_run_reports_steps_layers_and_validation(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "pl-eval"
    trainer = _trainer(run, tmp_path, max_steps=10, val_check_interval=5, num_sanity_val_steps=0)
    trainer.fit(TinyLM(), _loader(40), _loader(8))
    events = read_all(run / "events.jsonl")
    assert of_type(events, RunStarted)[0].trainer == "lightning.Trainer"
    assert [s.step for s in of_type(events, Step)] == list(range(1, 11))
    assert of_type(events, Step)[-1].tokens == 10 * 4 * 16
    assert [s.step for s in of_type(events, LayerStats)] == [5, 10]
    assert [e.step for e in of_type(events, Eval)] == [5, 10]
    assert of_type(events, RunFinished)[-1].status == "completed"


def test_a_resumed_lightning_run_appends_to_its_run(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "pl-resume"
    first = _trainer(run, tmp_path, max_steps=4, limit_val_batches=0)
    first.fit(TinyLM(), _loader(64))
    ckpt = tmp_path / "at4.ckpt"
    first.save_checkpoint(ckpt)
    again = _trainer(run, tmp_path, max_steps=8, limit_val_batches=0)
    again.fit(TinyLM(), _loader(64), ckpt_path=str(ckpt))
    events = read_all(run / "events.jsonl")
    started = of_type(events, RunStarted)
    assert len(started) == 2 and started[1].resumed_from == "a Lightning checkpoint at step 4"
    assert [e.step for e in of_type(events, Step)] == [*range(1, 9)]  # counts on from 4
    assert [f.status for f in of_type(events, RunFinished)] == ["completed", "completed"]
