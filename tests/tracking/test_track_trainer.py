"""A tiny Hugging Face Trainer run with `CockpitCallback`, steered with `growcockpit ctl`."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from hf_fixtures import tiny_trainer
from run_fixtures import of_type, wait_events
from test_track_loop import ctl

import growcockpit
from growcockpit.protocol import read_all
from growcockpit.protocol.events import (
    Checkpoint,
    Eval,
    LayerStats,
    RolledBack,
    RunFinished,
    RunStarted,
    Step,
)

pytestmark = pytest.mark.slow

MAX_STEPS = 100_000


def test_ctl_steers_a_trainer_run(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "hf"
    trainer = tiny_trainer(tmp_path / "out", [growcockpit.CockpitCallback(run)], MAX_STEPS)
    done = threading.Event()
    thread = threading.Thread(target=lambda: (trainer.train(), done.set()), daemon=True)
    thread.start()
    wait_events(run, lambda evs: len(of_type(evs, Step)) >= 3, timeout=60)

    assert ctl(run, "pause").returncode == 0
    held = trainer.state.global_step
    time.sleep(0.6)
    assert trainer.state.global_step == held, "the Trainer stepped while paused"

    out = ctl(run, "set_lr", "0.5")
    assert out.returncode == 0, out.stderr
    out = ctl(run, "checkpoint")
    assert out.returncode == 0, out.stderr
    assert ctl(run, "advance").returncode != 0
    assert ctl(run, "resume").returncode == 0
    wait_events(run, lambda evs: of_type(evs, Step)[-1].step > held + 3, timeout=60)
    # the linear schedule goes on at half its scale: each step event's lr is the one its
    # update used (global step s trains at the schedule's value before its s-th step)
    for ev in of_type(read_all(run / "events.jsonl"), Step)[held:]:
        unscaled = 1e-3 * (MAX_STEPS - (ev.step - 1)) / MAX_STEPS
        assert ev.lr == pytest.approx(0.5 * unscaled, rel=1e-4), ev.step
    saved = of_type(read_all(run / "events.jsonl"), Checkpoint)
    assert [c.reason for c in saved] == ["command"]
    assert (Path(saved[0].path) / "model.safetensors").is_file()
    assert (Path(saved[0].path) / "optimizer.pt").is_file()  # the Trainer's own checkpoint

    assert ctl(run, "stop").returncode == 0
    assert done.wait(60), "the Trainer did not end"
    events = read_all(run / "events.jsonl")
    assert of_type(events, RunFinished)[-1].status == "stopped"
    assert trainer.state.global_step < MAX_STEPS
    assert of_type(events, Checkpoint)[-1].reason == "stop"
    assert json.loads((run / "status.json").read_text())["state"] == "stopped"


def test_a_trainer_run_reports_steps_layers_and_evaluations(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "hf-eval"
    trainer = tiny_trainer(
        tmp_path / "out",
        [growcockpit.CockpitCallback(run, config={"note": "tiny"})],
        max_steps=10,
        eval_strategy="steps",
        eval_steps=5,
    )
    trainer.train()
    events = read_all(run / "events.jsonl")
    started = of_type(events, RunStarted)[0]
    assert started.trainer == "transformers.Trainer"
    assert started.config["note"] == "tiny" and started.config["training_args"]["max_steps"] == 10
    steps = of_type(events, Step)
    assert [s.step for s in steps] == list(range(1, 11))
    assert all(s.tokens_per_s > 0 and s.loss > 0 for s in steps)
    assert steps[-1].tokens == 10 * 4 * 16
    assert [e.step for e in of_type(events, Eval)] == [5, 10]
    stats = of_type(events, LayerStats)
    assert [s.step for s in stats] == [5, 10]
    assert all(layer.grad_norm and layer.update_ratio for s in stats for layer in s.layers)
    assert all(layer.fwd_ms is not None for layer in stats[-1].layers)
    assert of_type(events, RunFinished)[-1].status == "completed"


def test_a_resumed_trainer_appends_to_its_run(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "hf-resume"
    out = tmp_path / "out"
    first = tiny_trainer(
        out, [growcockpit.CockpitCallback(run)], 8, save_strategy="steps", save_steps=4
    )
    first.train()
    again = tiny_trainer(out, [growcockpit.CockpitCallback(run)], 8)
    again.train(resume_from_checkpoint=str(out / "checkpoint-4"))
    events = read_all(run / "events.jsonl")
    started = of_type(events, RunStarted)
    assert len(started) == 2 and started[1].resumed_from == "a Trainer checkpoint at step 4"
    assert [r.step for r in of_type(events, RolledBack)] == [4]
    assert [e.step for e in of_type(events, Step)] == [*range(1, 9), *range(5, 9)]
    assert [f.status for f in of_type(events, RunFinished)] == ["completed", "completed"]
