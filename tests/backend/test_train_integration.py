"""Real training through `growcockpit train`: a tiny BERT grown 2 → 4 layers on CPU.

These tests drive the actual command in a subprocess and judge it only by
what a user can see: events.jsonl, status.json, checkpoints and final/. The
pause test starts it cold (`python -m growcockpit`, as a user does); the other
runs fork it warm (run_fixtures.warm_growcockpit: the same command, without
importing torch again).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from repo_paths import REPO
from run_fixtures import env, growcockpit, of_type, warm_growcockpit

from growcockpit.protocol import read_all, read_status
from growcockpit.protocol.events import (
    Checkpoint,
    CommandEvent,
    Event,
    Grow,
    LayerStats,
    Paused,
    Resumed,
    RunFinished,
    RunStarted,
    StageStarted,
    Step,
)

pytestmark = pytest.mark.slow

ROOT = REPO
TINY = ROOT / "tests" / "plans" / "tiny.toml"


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory, gc_cache: Path) -> Path:
    run_dir = tmp_path_factory.mktemp("runs") / "tiny"
    res = warm_growcockpit("train", str(TINY), "--run-dir", str(run_dir), cache=gc_cache)
    assert res.returncode == 0, res.stderr
    return run_dir


def test_run_goes_through_both_stages(finished_run: Path) -> None:
    events = read_all(finished_run / "events.jsonl")
    assert isinstance(events[0], RunStarted)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    stages = of_type(events, StageStarted)
    assert [(s.index, s.layers, s.operator) for s in stages] == [(0, 2, "init"), (1, 4, "stack")]
    assert stages[0].trainable_layers == [0, 1]
    assert stages[1].trainable_layers == [2, 3]
    assert stages[1].embeddings_trainable is False and stages[1].head_trainable is True
    grow = of_type(events, Grow)
    assert len(grow) == 1 and (grow[0].from_layers, grow[0].to_layers) == (2, 4)
    steps = of_type(events, Step)
    assert [s.step for s in steps] == list(range(1, 41))
    assert {s.stage for s in steps if s.step > 20} == {1}
    finished = of_type(events, RunFinished)
    assert len(finished) == 1 and finished[0].status == "completed"
    status = read_status(finished_run)
    assert status.state == "completed" and status.step == 40


def test_start_up_phases_from_launch_to_the_first_step(finished_run: Path) -> None:
    """Each phase with its seconds, in launch order, all before the first step's end."""
    from growcockpit.protocol.events import StartupPhase

    events = read_all(finished_run / "events.jsonl")
    ended = [e for e in events if isinstance(e, StartupPhase) and e.done]
    assert [e.phase for e in ended] == [
        "imports",
        "device",
        "tokenizer",
        "token_cache",
        "model",
        "checkpoint",
        "optimizer",
        "first_step",
    ]
    assert all(e.seconds is not None and 0 <= e.seconds <= e.since_launch for e in ended)
    assert read_status(finished_run).phase == ""


def test_completed_status_names_the_last_stage(finished_run: Path) -> None:
    """Not one past it: `growcockpit status` once printed "stage 3/2" for a finished run."""
    status = read_status(finished_run)
    assert status.state == "completed"
    assert (status.stage, status.num_stages, status.stage_name) == (1, 2, "grow")
    res = growcockpit("status", str(finished_run), cache=finished_run)
    assert "stage 2/2 (grow)" in res.stdout, res.stdout


def test_status_json_is_the_fold_of_the_event_log(finished_run: Path) -> None:
    """The run-directory contract: status.json holds what the events imply, plus the
    liveness fields a log cannot hold (process start time, heartbeat)."""
    import dataclasses

    from growcockpit.protocol.status_fold import status_from_log

    written = read_status(finished_run)
    folded = status_from_log(read_all(finished_run / "events.jsonl"))
    live = {"heartbeat", "pid_started"}
    assert {
        f.name: getattr(folded, f.name) for f in dataclasses.fields(folded) if f.name not in live
    } == {
        f.name: getattr(written, f.name) for f in dataclasses.fields(written) if f.name not in live
    }


def test_the_attach_index_covers_the_whole_log(finished_run: Path) -> None:
    """`growcockpit train` keeps the cockpit's attach index beside the log, so the first
    cockpit to attach starts from it; it equals folding the log from scratch."""
    from ui_fixtures import assert_same_state

    from growcockpit.session.attach_index import state_to_dict
    from growcockpit.session.run_session import RunSession

    lines = (finished_run / "events.jsonl").read_bytes().count(b"\n")
    warm = RunSession(finished_run)
    assert warm.load_index() and warm.events_read == lines
    assert warm.poll() == 0  # nothing left to fold
    cold = RunSession(finished_run)
    cold._index_tried = True  # fold the log itself
    while cold.poll() >= cold.read_chunk:
        pass
    assert cold.events_read == lines
    assert_same_state(state_to_dict(warm.state), state_to_dict(cold.state))


def _nvml_answers() -> bool:
    """A GPU box's driver answers NVML; the test below is about a machine where it does not."""
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
    except Exception:
        return False
    return True


@pytest.mark.skipif(_nvml_answers(), reason="NVML answers here: this machine has a GPU driver")
def test_system_metrics_without_a_gpu(finished_run: Path) -> None:
    from growcockpit.protocol.events import System, WarningEvent

    events = read_all(finished_run / "events.jsonl")
    systems = of_type(events, System)
    assert systems, "the system sampler reports CPU and RAM even without a GPU"
    assert all(s.rss_bytes > 0 and s.ram_total > 0 for s in systems)
    nvml = [w for w in of_type(events, WarningEvent) if "NVML" in w.message]
    assert len(nvml) == 1, "no GPU is said once, calmly"


def test_stage_two_trains_only_new_layers(finished_run: Path) -> None:
    events = read_all(finished_run / "events.jsonl")
    stage2 = [e for e in of_type(events, LayerStats) if e.stage == 1]
    assert stage2, "no layer_stats in stage 2"
    for ev in stage2:
        assert [(layer.id, layer.trainable) for layer in ev.layers] == [
            (0, False),
            (1, False),
            (2, True),
            (3, True),
        ]
        assert ev.layers[0].grad_norm is None and ev.layers[1].grad_norm is None
        assert ev.layers[2].grad_norm is not None and ev.layers[2].grad_norm > 0
    timed = [e for e in stage2 if e.step % 10 == 0]
    assert timed, "layer timing runs every metrics.timing_every_steps (10) steps"
    for ev in timed:
        assert all(layer.fwd_ms is not None and layer.fwd_ms > 0 for layer in ev.layers)
        assert ev.layers[0].bwd_ms is None and ev.layers[1].bwd_ms is None, (
            "frozen layers do no backward"
        )
        assert all(layer.bwd_ms is not None and layer.bwd_ms > 0 for layer in ev.layers[2:])


def test_frozen_layers_bitwise_unchanged_and_final_loads(finished_run: Path) -> None:
    import torch
    from transformers import AutoTokenizer, BertForMaskedLM

    before = torch.load(finished_run / "checkpoints" / "step-20" / "state.pt", weights_only=False)[
        "model"
    ]
    final = BertForMaskedLM.from_pretrained(finished_run / "final")
    after = final.state_dict()
    frozen = [
        k
        for k in before
        if k.startswith(("bert.encoder.layer.0.", "bert.encoder.layer.1.", "bert.embeddings."))
    ]
    assert frozen
    for key in frozen:
        assert torch.equal(before[key], after[key]), f"{key} changed during the frozen stage"
    top_before = before["bert.encoder.layer.0.attention.self.query.weight"]
    assert not torch.equal(top_before, after["bert.encoder.layer.2.attention.self.query.weight"]), (
        "layer 2 started as a copy of layer 0 and should have trained away from it"
    )
    assert final.config.num_hidden_layers == 4
    tok = AutoTokenizer.from_pretrained(finished_run / "final")
    out = final(**tok("To be or not to be", return_tensors="pt"))
    assert out.logits.shape[-1] == len(tok)


def _wait_for(run_dir: Path, predicate, timeout: float = 90.0) -> list[Event]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        events = read_all(run_dir / "events.jsonl") if (run_dir / "events.jsonl").exists() else []
        if predicate(events):
            return events
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting; last events: {[e.type for e in events[-10:]]}")


def test_pause_resume_advance_stop(tmp_path: Path, gc_cache: Path) -> None:
    plan = tmp_path / "long.toml"
    plan.write_text(
        TINY.read_text()
        .replace("steps = 20\n", "steps = 100000\n")
        .replace("every_steps = 20", "every_steps = 0")
    )
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "growcockpit", "train", str(plan), "--run-dir", str(run_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env(gc_cache),
        start_new_session=True,
    )
    try:
        _wait_for(run_dir, lambda ev: len(of_type(ev, Step)) >= 5)

        res = growcockpit("ctl", str(run_dir), "pause", cache=gc_cache)
        assert res.returncode == 0, res.stderr
        events = _wait_for(run_dir, lambda ev: of_type(ev, Paused))
        status = json.loads(growcockpit("status", str(run_dir), "--json", cache=gc_cache).stdout)
        assert status["state"] == "paused"
        paused_seq = of_type(events, Paused)[0].seq
        time.sleep(1.5)
        events = read_all(run_dir / "events.jsonl")
        assert not [e for e in of_type(events, Step) if e.seq > paused_seq], (
            "steps ran while paused"
        )

        assert (
            growcockpit("ctl", str(run_dir), "pause", cache=gc_cache).returncode == 1
        )  # refused: already paused

        edit = tmp_path / "edit.toml"
        edit.write_text(
            '[[stages]]\nname = "grow-top1"\nlayers = 4\nenter = "stack"\ntrain = "top:1"\nsteps = 100000\n'
        )
        res = growcockpit("ctl", str(run_dir), "edit_stages", str(edit), cache=gc_cache)
        assert res.returncode == 0, res.stderr
        bad = tmp_path / "bad.toml"
        bad.write_text('[[stages]]\nname = "same"\nlayers = 2\ntrain = "new"\nsteps = 5\n')
        res = growcockpit("ctl", str(run_dir), "edit_stages", str(bad), cache=gc_cache)
        assert res.returncode == 1 and "stages[1]" in res.stderr, res.stderr
        assert "grow-top1" in (run_dir / "plan.toml").read_text()
        assert growcockpit("ctl", str(run_dir), "resume", cache=gc_cache).returncode == 0
        events = _wait_for(
            run_dir,
            lambda ev: (
                of_type(ev, Resumed) and of_type(ev, Step)[-1].seq > of_type(ev, Resumed)[0].seq
            ),
        )

        res = growcockpit("ctl", str(run_dir), "advance", cache=gc_cache)
        assert res.returncode == 0, res.stderr
        events = _wait_for(run_dir, lambda ev: len(of_type(ev, StageStarted)) == 2)
        stage2 = of_type(events, StageStarted)[1]
        assert (
            stage2.step < 100000 and stage2.name == "grow-top1" and stage2.trainable_layers == [3]
        )

        res = growcockpit("ctl", str(run_dir), "advance", cache=gc_cache)
        assert res.returncode == 1 and "last stage" in res.stderr

        res = growcockpit("ctl", str(run_dir), "stop", cache=gc_cache)
        assert res.returncode == 0, res.stderr
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    events = read_all(run_dir / "events.jsonl")
    commands = [(c.command, c.accepted) for c in of_type(events, CommandEvent)]
    assert commands == [
        ("pause", True),
        ("pause", False),
        ("edit_stages", True),
        ("edit_stages", False),
        ("resume", True),
        ("advance", True),
        ("advance", False),
        ("stop", True),
    ]
    assert of_type(events, Checkpoint)[-1].reason == "stop"
    finished = of_type(events, RunFinished)
    assert len(finished) == 1 and finished[0].status == "stopped"
    assert not (run_dir / "control.sock").exists()
    assert read_status(run_dir).state == "stopped"
    res = growcockpit("ctl", str(run_dir), "pause", cache=gc_cache)
    assert res.returncode == 2 and "no backend is listening" in res.stderr
    assert res.stderr.count("\n") == 1


def test_resume_mid_stage_is_bit_for_bit(tmp_path: Path, gc_cache: Path) -> None:
    """Kill-and-resume from a checkpoint inside the frozen stage replays the same losses exactly."""
    import shutil

    plan = tmp_path / "ck.toml"
    plan.write_text(TINY.read_text().replace("every_steps = 20", "every_steps = 10"))
    full = tmp_path / "full"
    assert (
        warm_growcockpit("train", str(plan), "--run-dir", str(full), cache=gc_cache).returncode == 0
    )
    cut = tmp_path / "cut"
    shutil.copytree(full, cut)
    shutil.rmtree(cut / "checkpoints" / "step-40")
    # A fresh tokenizer cache, as on another machine: the run's own tokenizer/ must be used.
    res = warm_growcockpit("resume", str(cut), "--force", cache=tmp_path / "empty-cache")
    assert res.returncode == 0, res.stderr
    assert "step-30" in res.stdout
    assert (cut / "tokenizer" / "tokenizer.json").exists()
    assert not list((tmp_path / "empty-cache").glob("tokenizers/*")), "resume retrained a tokenizer"

    reference = {e.step: e.loss for e in of_type(read_all(full / "events.jsonl"), Step)}
    events = read_all(cut / "events.jsonl")
    restart = max(i for i, e in enumerate(events) if isinstance(e, RunStarted))
    assert events[restart].resumed_from and events[restart].resumed_from.endswith("step-30")
    resumed = of_type(events[restart:], Step)
    assert [e.step for e in resumed] == list(range(31, 41))
    assert [e.loss for e in resumed] == [reference[e.step] for e in resumed]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


TINY_VCYCLE = ROOT / "tests" / "plans" / "tiny-vcycle.toml"


def test_vcycle_runs_and_resumes_with_its_level_snapshot(tmp_path: Path, gc_cache: Path) -> None:
    """Warm-up → coalesce → interpolate; a resume inside the small level still finds its partner."""
    import shutil

    full = tmp_path / "full"
    res = warm_growcockpit("train", str(TINY_VCYCLE), "--run-dir", str(full), cache=gc_cache)
    assert res.returncode == 0, res.stderr
    events = read_all(full / "events.jsonl")
    stages = of_type(events, StageStarted)
    assert [(s.operator, s.layers, s.width) for s in stages] == [
        ("init", 4, 64),
        ("coalesce", 2, 32),
        ("interpolate", 4, 64),
    ]
    grows = of_type(events, Grow)
    assert [(g.operator, g.from_layers, g.to_layers, g.from_width, g.to_width) for g in grows] == [
        ("coalesce", 4, 2, 64, 32),
        ("interpolate", 2, 4, 32, 64),
    ]
    assert all(g.loss_before is not None and g.loss_after is not None for g in grows)

    cut = tmp_path / "cut"
    shutil.copytree(full, cut)
    shutil.rmtree(cut / "checkpoints" / "step-30")
    shutil.rmtree(cut / "checkpoints" / "step-20")  # the interpolate stage's start checkpoint
    res = warm_growcockpit("resume", str(cut), "--force", cache=gc_cache)
    assert res.returncode == 0, res.stderr
    reference = {e.step: e.loss for e in of_type(events, Step)}
    resumed_events = read_all(cut / "events.jsonl")
    restart = max(i for i, e in enumerate(resumed_events) if isinstance(e, RunStarted))
    resumed = of_type(resumed_events[restart:], Step)
    assert [e.step for e in resumed] == list(range(16, 31))
    assert [e.loss for e in resumed] == [reference[e.step] for e in resumed]
