"""A loop written as nanoGPT writes it, under `growcockpit.track`: its own LR each
iteration, its own step numbers from 0, its own evaluations and prints, a resume from a
checkpoint, a blow-up. Commands go through the real CLI and control socket."""

from __future__ import annotations

import math
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from run_fixtures import env, of_type, wait_events
from test_track_loop import ctl
from tiny_models import batch, tiny_gpt2

import growcockpit
from growcockpit.protocol import read_all
from growcockpit.protocol.events import (
    Error,
    Eval,
    Paused,
    RolledBack,
    RunFinished,
    RunStarted,
    Scalars,
    Step,
    WarningEvent,
)

pytestmark = pytest.mark.slow

LR, WARMUP, MAX_ITERS = 1e-3, 5, 400


def get_lr(it: int) -> float:
    """nanoGPT's schedule: linear warm-up, then cosine down to a tenth."""
    if it < WARMUP:
        return LR * (it + 1) / (WARMUP + 1)
    ratio = (it - WARMUP) / (MAX_ITERS - WARMUP)
    return LR / 10 + 0.5 * (1 + math.cos(math.pi * min(ratio, 1.0))) * (LR - LR / 10)


class NanoLoop(threading.Thread):
    """nanoGPT's loop shape: `g["lr"] = get_lr(iter_num)` at the top of every iteration,
    iterations counted from 0, the tracker told each one's number."""

    def __init__(self, run: Path, max_iters: int = MAX_ITERS, **options: object) -> None:
        super().__init__(daemon=True)
        self.model = tiny_gpt2()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=LR)
        self.cockpit = growcockpit.track(run, model=self.model, optimizer=self.opt, **options)
        # what the optimizer really used at each step (read inside step(), after the cockpit)
        self.used: dict[int, float] = {}
        self.it = 0
        self.opt.register_step_pre_hook(
            lambda opt, *_: self.used.__setitem__(self.it, opt.param_groups[0]["lr"])
        )
        self.max_iters = max_iters
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.cockpit:
                for it in range(self.max_iters):
                    self.it = it
                    for group in self.opt.param_groups:
                        group["lr"] = get_lr(self.it)
                    ids = batch()
                    loss = self.model(input_ids=ids, labels=ids).loss
                    loss.backward()
                    self.opt.step()
                    self.opt.zero_grad(set_to_none=True)
                    if not self.cockpit.step(loss=loss, tokens=ids.numel(), step=self.it):
                        break
                    time.sleep(0.005)
        except BaseException as exc:
            self.error = exc


def test_set_lr_halves_the_lr_a_self_scheduling_loop_steps_with(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "nano"
    loop = NanoLoop(run)
    loop.start()
    wait_events(run, lambda evs: len(of_type(evs, Step)) >= 3, timeout=60)
    assert ctl(run, "pause").returncode == 0
    held = loop.it
    out = ctl(run, "set_lr", "0.5")
    assert out.returncode == 0, out.stderr
    assert ctl(run, "resume").returncode == 0
    wait_events(run, lambda evs: of_type(evs, Step)[-1].step > held + 5, timeout=60)
    assert ctl(run, "stop").returncode == 0
    loop.join(timeout=60)
    assert loop.error is None and not loop.is_alive()

    steps = {e.step: e for e in of_type(read_all(run / "events.jsonl"), Step)}
    assert min(steps) == 0, "the cockpit counts the loop's iterations as the loop does"
    before = [it for it in loop.used if it <= held]
    after = [it for it in loop.used if it > held]
    assert before and len(after) >= 5
    for it in before:  # the loop's own schedule, untouched
        assert loop.used[it] == pytest.approx(get_lr(it))
    for it in after:  # halved inside optimizer.step(), though the loop set get_lr(it) again
        assert loop.used[it] == pytest.approx(0.5 * get_lr(it))
        assert steps[it].lr == pytest.approx(loop.used[it]), "the step's lr is the one used"
    # and the loop's own value is back after each step: its schedule never sees the scale
    assert loop.opt.param_groups[0]["lr"] == pytest.approx(get_lr(loop.it))


def test_set_lr_without_an_optimizer_says_how_to_get_one(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "no-opt"
    model = torch.nn.Linear(4, 4)
    cockpit = growcockpit.track(run, model=model, console=False)
    ready = threading.Event()

    def loop() -> None:
        while not cockpit.should_stop:
            cockpit.step(loss=1.0)
            ready.set()
            time.sleep(0.02)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    assert ready.wait(30)
    out = ctl(run, "set_lr", "0.5")
    assert out.returncode != 0
    assert "pass optimizer= to growcockpit.track" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert ctl(run, "stop").returncode == 0
    thread.join(timeout=30)
    cockpit.close()


def _short_run(run: Path, lr: float, seed: int) -> None:
    """12 steps with an evaluation every 4 (two ways to send it) and a few logged scalars."""
    torch.manual_seed(seed)
    model = tiny_gpt2(seed=seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    val = batch()
    with growcockpit.track(run, model=model, optimizer=opt, console=False) as cockpit:
        for it in range(1, 13):
            ids = batch()
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
            cockpit.step(loss=loss, tokens=ids.numel())
            cockpit.log({"grad_norm": norm, "accuracy": 0.5})
            if it % 4 == 0:
                with torch.no_grad():
                    val_loss = model(input_ids=val, labels=val).loss
                if it == 8:
                    cockpit.eval(val_loss=val_loss, accuracy=0.25)
                else:
                    cockpit.log({"val/loss": val_loss.item()})
        # bad values: one warning line each, never an exception in the script
        cockpit.log({"nan": float("nan"), "text": "hello", "ok": 1})
        cockpit.log({f"k{i}": i for i in range(1000)})
        cockpit.log([1, 2, 3])  # type: ignore[arg-type]
        cockpit.eval(val_loss="low")
    cockpit.log({"after_close": 1.0})  # one line on stderr, no exception


def test_logged_scalars_and_evaluations_reach_the_run_and_compare(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _short_run(runs / "a", 3e-3, 0)
    _short_run(runs / "b", 1e-5, 0)
    events = read_all(runs / "a" / "events.jsonl")
    evals = of_type(events, Eval)
    assert [e.step for e in evals] == [4, 8, 12]
    assert all(
        math.isfinite(e.val_loss) and e.val_ppl == pytest.approx(math.exp(e.val_loss))
        for e in evals
    )
    logged = of_type(events, Scalars)
    assert logged[0].step == 1 and set(logged[0].values) == {"grad_norm", "accuracy"}
    assert any(s.values == {"val/accuracy": 0.25} and s.step == 8 for s in logged)
    assert any(s.values == {"ok": 1.0} for s in logged)
    warned = [w.message for w in of_type(events, WarningEvent)]
    assert any("'nan' dropped: nan is not finite" in w for w in warned)
    assert any("'text' dropped: str 'hello' is not a number" in w for w in warned)
    assert any("1000 keys, only the first 256 kept" in w for w in warned)
    assert any("expects a dict of name → number, got list" in w for w in warned)
    assert any("'val_loss' dropped" in w for w in warned)
    assert of_type(events, RunFinished)[-1].status == "completed"

    out = subprocess.run(
        [sys.executable, "-m", "growcockpit", "compare", str(runs / "a"), str(runs / "b")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env(tmp_path / "cache"),
    )
    assert out.returncode == 0, out.stderr
    assert "target: a's final validation loss" in out.stdout
    rows = {line.split()[0]: line for line in out.stdout.splitlines()[2:4]}
    assert set(rows) == {"a", "b"} and "the target" in rows["a"]
    assert "reaches a's final loss" in rows["b"] or "not reached (" in rows["b"], rows["b"]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "growcockpit",
            "export",
            str(runs / "a"),
            "--tensorboard",
            str(tmp_path / "tb"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env(tmp_path / "cache"),
    )
    assert out.returncode == 0, out.stderr
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(next((tmp_path / "tb").rglob("events.out.tfevents*")).parent))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"loss/val", "logged/grad_norm", "logged/val/accuracy"} <= tags


SCRIPT = """
import sys, torch, growcockpit
m = torch.nn.Linear(4, 4)
o = torch.optim.SGD(m.parameters(), lr=0.1)
print("before track: not in the run")
with growcockpit.track(sys.argv[1], model=m, optimizer=o) as c:
    for it in range(3):
        print(f"iter {it}: loss 1.0\\r", end="")
        print(f"iter {it}: loss 1.0")
        c.step(loss=1.0, step=it)
    print("warning: something on stderr", file=sys.stderr)
print("after close: not in the run")
"""


def test_the_scripts_console_is_copied_into_the_run(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "console"
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(run)], capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # the terminal shows exactly what it would show untracked
    assert out.stdout.startswith(b"before track: not in the run\niter 0: loss 1.0\riter 0")
    assert out.stdout.endswith(b"after close: not in the run\n")
    assert b"warning: something on stderr" in out.stderr
    log = (run / "backend.log").read_text()
    assert "iter 2: loss 1.0" in log and "warning: something on stderr" in log
    assert "before track" not in log and "after close" not in log

    from growcockpit.session.console_tail import ConsoleTail

    tail = ConsoleTail(run / "backend.log")  # what the Console tab reads
    tail.poll()
    texts = [line.text for line in tail.since(0)]
    assert texts[:3] == ["iter 0: loss 1.0", "iter 1: loss 1.0", "iter 2: loss 1.0"]
    assert [e.step for e in of_type(read_all(run / "events.jsonl"), Step)] == [0, 1, 2]

    from growcockpit.session.run_session import RunSession
    from growcockpit.session.samples_view import empty_text

    session = RunSession(run)
    session.poll()
    advice = empty_text(session.state.plan_dict, session.state.trainer)
    assert advice.startswith("No samples in a tracked run (PyTorch loop)")
    assert "Console tab" in advice and "add\n" not in advice  # no plan file to edit


def test_the_console_copy_is_bounded(tmp_path: Path) -> None:
    from growcockpit.tracking.console import ConsoleCopy

    path = tmp_path / "backend.log"
    copy = ConsoleCopy(path, max_bytes=4096)
    try:
        for i in range(400):
            print(f"line {i:04d} " + "x" * 40)
    finally:
        copy.close()
    text = path.read_text()
    assert len(text.encode()) <= 4096
    assert "started afresh" in text and "line 0399" in text


def _resumable(run: Path, iters: range, **options: object) -> None:
    model = tiny_gpt2()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with growcockpit.track(run, model=model, optimizer=opt, console=False, **options) as c:
        for it in iters:
            ids = batch()
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            c.step(loss=loss, tokens=ids.numel(), step=it)


def test_a_resumed_loop_appends_to_its_run_and_keeps_its_step_numbers(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "resumed"
    _resumable(run, range(0, 31), total_steps=30)  # nanoGPT: iterations 0..max_iters
    first = read_all(run / "events.jsonl")
    assert [e.step for e in of_type(first, Step)] == list(range(31))
    assert of_type(first, RunFinished)[-1].step == 30, "no 'step 31/30'"

    with pytest.raises(growcockpit.TrackError, match="start_step=N to resume"):
        _resumable(run, range(0))
    # resumed from the checkpoint of iteration 20: 20..30 again, appended to the same run
    _resumable(run, range(20, 31), start_step=20, resumed_from="checkpoints/ckpt.pt")
    events = read_all(run / "events.jsonl")
    started = of_type(events, RunStarted)
    assert len(started) == 2 and started[1].resumed_from == "checkpoints/ckpt.pt"
    cut = of_type(events, RolledBack)
    assert [c.step for c in cut] == [19] and cut[0].tokens == 20 * batch().numel()
    steps = [e.step for e in of_type(events, Step)]
    assert steps == list(range(31)) + list(range(20, 31))
    assert of_type(events, RunFinished)[-1].step == 30
    import json

    status = json.loads((run / "status.json").read_text())
    assert status["state"] == "completed" and status["step"] == 30

    from growcockpit.session.run_session import RunSession

    session = RunSession(run)
    session.poll()
    assert session.state.train_loss.xs == [float(s) for s in range(31)]


def test_a_resume_in_a_new_directory_says_what_it_resumed(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "fresh"
    _resumable(run, range(5), start_step=5, resumed_from="runs/old at step 5")
    events = read_all(run / "events.jsonl")
    assert of_type(events, RunStarted)[0].resumed_from == "runs/old at step 5"
    assert not of_type(events, RolledBack)
    assert [e.step for e in of_type(events, Step)] == [0, 1, 2, 3, 4]


class GuardLoop(threading.Thread):
    """A loop whose loss turns NaN at iteration `bad`."""

    def __init__(self, run: Path, bad: int, **options: object) -> None:
        super().__init__(daemon=True)
        model = torch.nn.Linear(4, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.cockpit = growcockpit.track(run, model=model, optimizer=opt, console=False, **options)
        self.bad = bad
        self.it = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.cockpit:
                for it in range(1, 10_000):
                    self.it = it
                    loss = math.nan if self.it == self.bad else 1.0 + 0.01 * (self.it % 3)
                    if not self.cockpit.step(loss=loss):
                        break
                    time.sleep(0.005)
        except BaseException as exc:
            self.error = exc


def test_a_nan_loss_pauses_the_loop_in_step_with_the_way_back(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "nan"
    loop = GuardLoop(run, bad=8)
    loop.start()
    wait_events(run, lambda evs: bool(of_type(evs, Paused)), timeout=60)
    time.sleep(0.5)
    assert loop.it == 8, "the loop went on after the NaN"
    events = read_all(run / "events.jsonl")
    assert of_type(events, Paused)[0].reason == "non-finite loss"
    error = of_type(events, Error)[0].message
    assert error.startswith("loss is nan at step 8: paused;") and "set_lr 0.1" in error
    assert ctl(run, "resume").returncode == 0
    wait_events(run, lambda evs: of_type(evs, Step)[-1].step > 12, timeout=60)
    assert ctl(run, "stop").returncode == 0
    loop.join(timeout=60)
    assert loop.error is None


def test_a_loss_spike_pauses_and_the_guard_can_be_turned_off(tmp_path: Path) -> None:
    from growcockpit.tracking.guard import LossGuard

    guard = LossGuard(window=10, limit=8.0)
    assert all(guard.check(2.0 + 0.01 * (i % 3), i) is None for i in range(10))
    verdict = guard.check(30.0, 10)
    assert verdict is not None and verdict[0] == "loss spike"
    assert "robust SDs above the median 2.01 of the last 10 steps" in verdict[1]
    assert guard.check(2.0, 11) is None  # refilling, under the ceiling
    assert guard.check(25.0, 12) is not None  # over 10x the pre-spike median
    solved = LossGuard(window=10, limit=8.0)  # a loss near 0.01: the floor in nats holds
    assert all(solved.check(0.01 + 0.002 * (i % 3), i) is None for i in range(10))
    assert solved.check(0.17, 10) is None, "a tenth of a nat above a solved task: noise"
    assert solved.check(1.5, 11) is not None

    run = tmp_path / "runs" / "unguarded"
    loop = GuardLoop(run, bad=3, guard=False)
    loop.start()
    wait_events(run, lambda evs: len(of_type(evs, Step)) > 6, timeout=60)
    assert not of_type(read_all(run / "events.jsonl"), Paused)
    assert ctl(run, "stop").returncode == 0
    loop.join(timeout=60)
