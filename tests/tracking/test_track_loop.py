"""A plain PyTorch loop under `growcockpit.track`, steered with `growcockpit ctl`.

The loop runs in a thread of the test; the commands go through the real CLI in a
subprocess and the real control socket, and the effects are read back from the loop
itself (its steps, its optimizer's LR, its checkpoint, its end) and from the run
directory, as any growcockpit tool reads it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from run_fixtures import env, of_type, wait_events
from tiny_models import batch, tiny_gpt2

import growcockpit
from growcockpit.protocol import read_all
from growcockpit.protocol.events import (
    Checkpoint,
    CommandEvent,
    LayerStats,
    RunFinished,
    RunStarted,
    Step,
)
from growcockpit.protocol.run_notes import RunNotes, read_notes

pytestmark = pytest.mark.slow


def ctl(run: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "growcockpit", "ctl", str(run), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env(run.parent / "cache"),
    )


class Loop(threading.Thread):
    """A user's loop: AdamW, a constant LambdaLR schedule, tracked; ends when step() says so."""

    def __init__(self, run: Path, max_steps: int = 100_000) -> None:
        super().__init__(daemon=True)
        self.model = tiny_gpt2()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda s: 1.0)
        self.cockpit = growcockpit.track(
            run, model=self.model, optimizer=self.opt, config={"lr": 1e-3}, scheduler=self.sched
        )
        self.max_steps = max_steps
        self.steps = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.cockpit:
                for _ in range(self.max_steps):
                    ids = batch()
                    loss = self.model(input_ids=ids, labels=ids).loss
                    loss.backward()
                    self.opt.step()
                    self.sched.step()
                    self.opt.zero_grad()
                    self.steps += 1
                    if not self.cockpit.step(loss=loss, tokens=ids.numel()):
                        break
                    time.sleep(0.01)
        except BaseException as exc:  # surfaced by the test
            self.error = exc


def test_ctl_pauses_scales_lr_checkpoints_and_stops_a_plain_loop(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "plain"
    loop = Loop(run)
    loop.start()
    wait_events(run, lambda evs: len(of_type(evs, Step)) >= 3, timeout=60)

    assert ctl(run, "pause").returncode == 0
    held = loop.steps
    time.sleep(0.6)
    assert loop.steps == held, "steps went on while paused"

    out = ctl(run, "set_lr", "0.5")
    assert out.returncode == 0, out.stderr
    assert "applied inside each optimizer step" in out.stdout

    out = ctl(run, "checkpoint")
    assert out.returncode == 0, out.stderr
    saved = of_type(read_all(run / "events.jsonl"), Checkpoint)[-1]
    assert (Path(saved.path) / "config.json").is_file()
    assert (Path(saved.path) / "optimizer.pt").is_file()

    for refused in (["advance"], ["rollback", "3"]):  # a step value reaches the run, too
        out = ctl(run, *refused)
        assert out.returncode != 0
        assert "tracked loop" in out.stderr and len(out.stderr.strip().splitlines()) == 1

    assert ctl(run, "resume").returncode == 0
    wait_events(run, lambda evs: of_type(evs, Step)[-1].step > held + 3, timeout=60)
    # the schedule went on from the new scale: still halved after more scheduler steps
    assert of_type(read_all(run / "events.jsonl"), Step)[-1].lr == pytest.approx(5e-4)

    assert ctl(run, "stop").returncode == 0
    loop.join(timeout=60)
    assert not loop.is_alive() and loop.error is None
    events = read_all(run / "events.jsonl")
    assert of_type(events, RunFinished)[-1].status == "stopped"
    assert of_type(events, Checkpoint)[-1].reason == "stop"
    status = json.loads((run / "status.json").read_text())
    assert status["state"] == "stopped" and status["step"] == loop.steps
    assert not (run / "control.sock").exists()
    commands = {e.command: e.accepted for e in of_type(events, CommandEvent)}
    assert commands == {
        "pause": True,
        "set_lr": True,
        "checkpoint": True,
        "advance": False,
        "rollback": False,
        "resume": True,
        "stop": True,
    }


def test_layer_stats_come_at_the_default_cadence_with_timings(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "cadence"
    loop = Loop(run, max_steps=20)
    loop.run()
    assert loop.error is None
    events = read_all(run / "events.jsonl")
    started = of_type(events, RunStarted)[0]
    assert started.trainer == "PyTorch loop" and started.config == {"lr": 1e-3}
    stats = of_type(events, LayerStats)
    assert [s.step for s in stats] == [5, 10, 15, 20]
    for s in stats:
        assert [layer.id for layer in s.layers] == [0, 1]
        assert all(layer.grad_norm and layer.grad_norm > 0 for layer in s.layers)
        assert all(layer.update_ratio and layer.update_ratio > 0 for layer in s.layers)
        timed = s.step % 10 == 0
        assert all((layer.fwd_ms is not None) == timed for layer in s.layers)
        assert all((layer.bwd_ms is not None) == timed for layer in s.layers)
    assert of_type(events, RunFinished)[-1].status == "completed"


def test_a_model_of_no_family_reports_the_blocks_it_is_given(tmp_path: Path) -> None:
    blocks = [torch.nn.Linear(8, 8) for _ in range(3)]
    model = torch.nn.Sequential(*blocks)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with growcockpit.track(tmp_path / "seq", model=model, optimizer=opt, layers=blocks) as cockpit:
        for _ in range(5):
            model(torch.randn(2, 8)).square().mean().backward()
            opt.step()
            opt.zero_grad()
            cockpit.step(loss=0.0)
    stats = of_type(read_all(tmp_path / "seq" / "events.jsonl"), LayerStats)
    assert [len(s.layers) for s in stats] == [3]


def test_without_blocks_a_warning_says_how_to_get_layer_stats(tmp_path: Path) -> None:
    model = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with growcockpit.track(tmp_path / "lin", model=model, optimizer=opt) as cockpit:
        cockpit.step(loss=1.0)
    events = read_all(tmp_path / "lin" / "events.jsonl")
    assert any("pass layers=" in getattr(e, "message", "") for e in events)


def test_note_and_tags_are_the_runs_notes(tmp_path: Path) -> None:
    model = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    run = tmp_path / "noted"
    growcockpit.track(run, model=model, optimizer=opt, note="lr sweep", tags=["hf", "a1"]).close()
    assert read_notes(run) == RunNotes("lr sweep", ("hf", "a1"))
    with pytest.raises(growcockpit.TrackError, match="tag"):
        growcockpit.track(tmp_path / "bad", model=model, optimizer=opt, tags=["no spaces!"])
    assert not (tmp_path / "bad").exists()  # refused before anything was written


def test_a_directory_that_holds_a_run_is_refused_in_one_line(tmp_path: Path) -> None:
    model = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    growcockpit.track(tmp_path / "once", model=model, optimizer=opt).close()
    with pytest.raises(growcockpit.TrackError, match="already holds a run"):
        growcockpit.track(tmp_path / "once", model=model, optimizer=opt)


def test_a_crash_in_the_loop_is_recorded(tmp_path: Path) -> None:
    model = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(RuntimeError), growcockpit.track(tmp_path / "c", model=model, optimizer=opt):
        raise RuntimeError("the loop broke")
    finished = of_type(read_all(tmp_path / "c" / "events.jsonl"), RunFinished)[-1]
    assert finished.status == "crashed" and "the loop broke" in finished.message


def test_a_script_that_exits_without_close_leaves_no_live_run(tmp_path: Path) -> None:
    script = (
        "import sys, torch, growcockpit\n"
        "m = torch.nn.Linear(2, 2)\n"
        "o = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "growcockpit.track(sys.argv[1], model=m, optimizer=o).step(loss=1.0)\n"
        "raise SystemExit(3)\n"
    )
    run = tmp_path / "noclose"
    out = subprocess.run(
        [sys.executable, "-c", script, str(run)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 3
    finished = of_type(read_all(run / "events.jsonl"), RunFinished)
    assert [f.status for f in finished] == ["crashed"]
    assert json.loads((run / "status.json").read_text())["state"] == "crashed"
    assert not (run / "control.sock").exists()


def test_status_export_and_resume_on_a_tracked_run(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "cli"
    loop = Loop(run, max_steps=6)
    loop.run()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "growcockpit", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env(tmp_path / "cache"),
        )

    out = cli("status", str(run))
    assert out.returncode == 0 and "completed" in out.stdout and "step 6 " in out.stdout
    out = cli("export", str(run), "--tensorboard", str(tmp_path / "tb"))
    assert out.returncode == 0, out.stderr
    assert any((tmp_path / "tb").rglob("events.out.tfevents*"))
    out = cli("resume", str(run))
    assert out.returncode == 2
    assert "tracked run" in out.stderr and len(out.stderr.strip().splitlines()) == 1
