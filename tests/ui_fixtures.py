"""A realistic recorded run for cockpit tests: MSLT on a small BERT, 2 -> 4 layers.

Fixed timestamps (no wall clock), written with the real event classes and the
real `EventLog`, so the cockpit reads exactly what a backend would write.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from growcockpit.protocol import (
    Checkpoint,
    CommandEvent,
    ControlServer,
    Error,
    Eval,
    Event,
    EventLog,
    GpuStat,
    Grow,
    LayerStat,
    LayerStats,
    Paused,
    RankMemory,
    RanksMemory,
    Resumed,
    RunFinished,
    RunPaths,
    RunStarted,
    StageStarted,
    StartupPhase,
    Step,
    System,
    WarningEvent,
)

# Cockpit tests never read or write the user's settings (the remembered theme).
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="gc-xdg-")

T0 = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC
STEP_S = 0.5
STAGE_STEPS = 40
PLAN = {
    "name": "mslt-demo",
    "description": "two-stage MSLT fixture",
    "model": {"family": "bert", "hidden_size": 128, "num_heads": 4, "final_layers": 4},
    "stages": [
        {"name": "shallow", "layers": 2, "enter": "init", "train": "all", "steps": STAGE_STEPS},
        {
            "name": "grow-4",
            "layers": 4,
            "enter": "stack",
            "source": "top",
            "train": "new",
            "steps": STAGE_STEPS,
        },
    ],
}


# A fixed plan file for plan-screen snapshots (the shipped sample plans get retuned).
PLAN_TOML = """\
name = "mslt-snapshot"
description = "fixture: BERT grown 2 -> 4 -> 6 layers, training only the new layers, then all"

[model]
family = "bert"
hidden_size = 128
num_heads = 4
intermediate_size = 512
max_seq_len = 128
final_layers = 6

[optim]
lr = 5e-4
batch_size = 16

[[stages]]
name = "shallow"
layers = 2
enter = "init"
train = "all"
steps = 100

[[stages]]
name = "grow-4"
layers = 4
enter = "stack"
source = "top"
train = "new"
steps = 100

[[stages]]
name = "grow-6"
layers = 6
enter = "stack"
source = "top"
train = "top:3"
steps = 100
lr = 3e-4
advance = "manual"

[[stages]]
name = "all-layers"
layers = 6
train = "all"
steps = 50
"""


def write_plan(path: Path) -> Path:
    path.write_text(PLAN_TOML)
    return path


def loss_at(step: int) -> float:
    return 7.0 * math.exp(-step / 60.0) + 2.0 + 0.05 * math.sin(step)


def recorded_events(finished: bool = True, upto_step: int | None = None) -> list[Event]:
    """The run's events in order. `finished=False` leaves the run live (no run_finished);
    `upto_step` cuts the log after that step (a run still in progress)."""
    evs: list[Event] = []
    t = T0

    def at(ev: Event) -> Event:
        ev.t = round(t, 3)
        evs.append(ev)
        return ev

    last = 2 * STAGE_STEPS if upto_step is None else upto_step
    at(RunStarted(run_id="mslt-demo-20260101-000000", plan=PLAN, device="cpu", pid=0))
    at(
        StageStarted(
            index=0,
            name="shallow",
            layers=2,
            trainable_layers=[0, 1],
            operator="init",
            op_seconds=0.01,
            steps=STAGE_STEPS,
            advance="auto",
            step=0,
        )
    )
    layers = 2
    trainable = {0, 1}
    for step in range(1, last + 1):
        t += STEP_S
        at(
            Step(
                step=step,
                stage=0 if step <= STAGE_STEPS else 1,
                loss=round(loss_at(step), 4),
                lr=5e-4,
                tokens=2048 * step,
                tokens_per_s=4096.0 if step <= STAGE_STEPS else 3500.0,
                step_ms=500.0,
            )
        )
        if step % 5 == 0:
            at(
                LayerStats(
                    step=step,
                    stage=0 if step <= STAGE_STEPS else 1,
                    layers=[
                        LayerStat(
                            id=i,
                            trainable=i in trainable,
                            grad_norm=round(0.5 / (i + 1) + 0.001 * step, 4)
                            if i in trainable
                            else None,
                            weight_norm=round(20.0 + i + 0.01 * step, 3),
                            update_ratio=1e-3 if i in trainable else None,
                        )
                        for i in range(layers)
                    ],
                )
            )
        if step % 20 == 0:
            at(
                Eval(
                    step=step,
                    stage=0 if step <= STAGE_STEPS else 1,
                    val_loss=round(loss_at(step) + 0.1, 4),
                    val_ppl=0.0,
                )
            )
        if step == 10:
            at(System(cpu_pct=180.0, rss_bytes=900_000_000))
        if step == STAGE_STEPS:
            at(Checkpoint(step=step, path="checkpoints/step-40", reason="stage end"))
            t += 0.2
            at(
                Grow(
                    step=step,
                    stage=1,
                    operator="stack",
                    from_layers=2,
                    to_layers=4,
                    from_width=128,
                    to_width=128,
                    seconds=0.12,
                    loss_before=round(loss_at(step), 4),
                    loss_after=round(loss_at(step) + 0.3, 4),
                )
            )
            at(
                StageStarted(
                    index=1,
                    name="grow-4",
                    layers=4,
                    trainable_layers=[2, 3],
                    operator="stack",
                    op_seconds=0.12,
                    steps=STAGE_STEPS,
                    advance="auto",
                    step=step,
                    embeddings_trainable=False,
                )
            )
            layers = 4
            trainable = {2, 3}
        if step == 55:
            at(CommandEvent(id="c1", command="pause", accepted=True, step=step))
            at(Paused(step=step, reason="command"))
            t += 30.0
            at(CommandEvent(id="c2", command="resume", accepted=True, step=step))
            at(Resumed(step=step))
        if step == 60:
            at(
                CommandEvent(
                    id="c3",
                    command="advance",
                    accepted=False,
                    reason="stage 2 is the last stage",
                    step=step,
                )
            )
            at(WarningEvent(message="loss spiked after the grow (+0.30)", step=step))
    if finished and upto_step is None:
        t += 1.0
        at(Checkpoint(step=last, path="checkpoints/step-80", reason="final"))
        at(RunFinished(status="completed", step=last, final_path="final"))
    return evs


# a launch's start-up phases and their seconds (protocol/startup_phases.py)
STARTUP = (
    ("tokenizer", 0.3),
    ("token_cache", 4.1),
    ("model", 0.4),
    ("checkpoint", 0.2),
    ("optimizer", 0.1),
    ("first_step", 0.6),
)


def starting_events(until: str | None = None) -> list[Event]:
    """A launch from run_started to its first step; `until` cuts the log as that phase
    begins (a run still starting). The imports (5.2 s) and device arrive done, as a
    backend sends them once its log is open."""
    t = T0
    evs: list[Event] = [RunStarted(run_id="mslt-demo-20260101-000000", plan=PLAN, t=t)]
    evs.append(StartupPhase(phase="imports", done=True, seconds=5.2, since_launch=5.2, t=t))
    evs.append(StartupPhase(phase="device", done=True, seconds=0.0, since_launch=5.2, t=t))
    for phase, seconds in STARTUP:
        if phase == "first_step":
            evs.append(StageStarted(index=0, name="shallow", layers=2, steps=STAGE_STEPS, t=t))
        evs.append(StartupPhase(phase=phase, since_launch=t - T0 + 5.2, t=t))
        if phase == until:
            return evs
        t = round(t + seconds, 3)
        if phase == "first_step":
            evs.append(Step(step=1, stage=0, loss=loss_at(1), tokens=2048, step_ms=600.0, t=t))
        done = StartupPhase(phase=phase, done=True, seconds=seconds, since_launch=t - T0 + 5.2)
        done.t = t
        evs.append(done)
    return evs


def write_events(path: Path, events: list[Event]) -> Path:
    """Append events with the real writer (it numbers `seq`; timestamps are kept)."""
    with EventLog(path) as log:
        for ev in events:
            log.append(ev)
    return path


def write_recorded_run(run_dir: Path, finished: bool = True, upto_step: int | None = None) -> Path:
    """A run directory holding the recorded events.jsonl; returns the run directory."""
    run_dir.mkdir(parents=True, exist_ok=True)
    write_events(run_dir / "events.jsonl", recorded_events(finished, upto_step))
    return run_dir


def crashed_events() -> list[Event]:
    """The recorded run, cut at step 50 by a crash with a traceback."""
    evs = recorded_events(finished=False, upto_step=50)
    t = evs[-1].t + 0.5
    tb = (
        "Traceback (most recent call last):\n"
        '  File "growcockpit/backend/loop/engine.py", line 210, in step\n'
        "    loss.backward()\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered"
    )
    evs.append(Error(t=t, message="training step failed", traceback=tb, step=50))
    evs.append(RunFinished(t=t + 0.1, status="crashed", step=50, message="see the traceback"))
    return evs


def gpu_system(t: float) -> System:
    return System(
        t=t,
        cpu_pct=95.0,
        rss_bytes=3_000_000_000,
        ram_used=40 * 2**30,
        ram_total=128 * 2**30,
        gpus=[
            GpuStat(
                index=0,
                name="NVIDIA H200",
                util=97.0,
                mem_used=80 * 2**30,
                mem_total=141 * 2**30,
                power_w=610.0,
                temp_c=64.0,
            ),
            GpuStat(
                index=1,
                name="NVIDIA H200",
                util=12.0,
                mem_used=2 * 2**30,
                mem_total=141 * 2**30,
                power_w=90.0,
                temp_c=35.0,
            ),
        ],
    )


def fsdp_memory(t: float, stage: int = 1) -> RanksMemory:
    return RanksMemory(
        t=t,
        step=60,
        stage=stage,
        strategy="fsdp",
        world_size=2,
        ranks=[
            RankMemory(
                rank=k, params=3 << 20, grads=1 << 20, optimizer=2 << 20, device_peak=9 << 30
            )
            for k in (0, 1)
        ],
    )


def write_long_log(path: Path, n_events: int = 100_000, layers: int = 48) -> dict[str, Any]:
    """A generated 100k-event log: 48 layers grown in 4 stages over ~1M steps, with
    layer stats, evals, system samples, pauses and LR changes. Written as raw lines
    (fast); returns facts for assertions."""
    stages = [(f"depth-{d}", d) for d in (12, 24, 36, layers)]
    lines: list[str] = []
    seq = 0
    t = T0
    step = 0
    stage_steps = 250_000
    per_step = 10  # one step event per 10 optimizer steps

    def emit(obj: dict[str, Any]) -> None:
        nonlocal seq
        seq += 1
        obj["seq"], obj["t"] = seq, round(t, 3)
        lines.append(json.dumps(obj, separators=(",", ":")))

    plan = {
        "name": "long-48",
        "model": {"family": "bert", "final_layers": layers},
        "stages": [
            {
                "name": n,
                "layers": d,
                "steps": stage_steps,
                "enter": "init" if i == 0 else "stack",
                "train": "all" if i == 0 else "new",
            }
            for i, (n, d) in enumerate(stages)
        ],
    }
    emit(
        {
            "type": "run_started",
            "run_id": "long-48",
            "plan": plan,
            "device": "cuda",
            "world_size": 1,
        }
    )
    stage = -1
    prev_layers = 0
    while seq < n_events - 1:
        want = min(len(stages) - 1, step // stage_steps)
        if want != stage:
            stage = want
            name, depth = stages[stage]
            trainable = list(range(prev_layers, depth)) if stage else list(range(depth))
            if stage:
                emit(
                    {
                        "type": "grow",
                        "step": step,
                        "stage": stage,
                        "operator": "stack",
                        "from_layers": prev_layers,
                        "to_layers": depth,
                        "seconds": 0.5,
                    }
                )
            emit(
                {
                    "type": "stage_started",
                    "index": stage,
                    "name": name,
                    "layers": depth,
                    "trainable_layers": trainable,
                    "operator": "init" if stage == 0 else "stack",
                    "steps": stage_steps,
                    "step": step,
                }
            )
            prev_layers = depth
        step += per_step
        t += 1.0
        loss = 8.0 * math.exp(-step / 300_000) + 2.0 + 0.1 * math.sin(step / 777)
        emit(
            {
                "type": "step",
                "step": step,
                "stage": stage,
                "loss": round(loss, 4),
                "lr": 1e-4,
                "tokens": step * 4096,
                "tokens_per_s": 40_000.0 + 1000 * stage,
                "step_ms": 100.0,
                "fwd_ms": 30.0,
                "bwd_ms": 55.0 - 10 * stage,
                "opt_ms": 10.0,
                "data_ms": 5.0,
            }
        )
        if step % 500 == 0:
            depth = stages[stage][1]
            lo = prev_layers if stage else 0
            emit(
                {
                    "type": "layer_stats",
                    "step": step,
                    "stage": stage,
                    "layers": [
                        {
                            "id": i,
                            "trainable": i >= lo if stage else True,
                            "grad_norm": (0.1 + 0.01 * i + 0.05 * math.sin(step / 5000 + i))
                            if (i >= lo or stage == 0)
                            else None,
                            "weight_norm": 20.0 + i,
                        }
                        for i in range(depth)
                    ],
                }
            )
        if step % 5000 == 0:
            emit({"type": "eval", "step": step, "stage": stage, "val_loss": round(loss + 0.05, 4)})
        if step % 2000 == 0:
            emit(
                {
                    "type": "system",
                    "cpu_pct": 100.0,
                    "rss_bytes": 2 * 2**30,
                    "gpus": [
                        {
                            "index": 0,
                            "name": "H200",
                            "util": 90.0,
                            "mem_used": 50 * 2**30,
                            "mem_total": 141 * 2**30,
                            "power_w": 500.0,
                            "temp_c": 60.0,
                        }
                    ],
                }
            )
        if step % 100_000 == 0:
            emit({"type": "paused", "step": step})
            t += 60
            emit({"type": "resumed", "step": step})
        if step % 170_000 == 0:
            emit(
                {
                    "type": "command",
                    "id": f"lr{step}",
                    "command": "set_lr",
                    "args": {"factor": 0.5},
                    "accepted": True,
                    "step": step,
                }
            )
    emit({"type": "run_finished", "status": "completed", "step": step})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return {"events": seq, "last_step": step, "layers": layers}


def set_mtime(path: Path, when: float = T0) -> None:
    """Fix a run's file times (home screen ages) for snapshots."""
    for p in [path, *path.rglob("*")]:
        os.utime(p, (when, when))


async def settle(pilot: Any, timeout: float = 10.0) -> Any:
    """Wait until the dashboard's tail worker has read the whole log, then flush the views."""
    from growcockpit.ui.screens import DashboardScreen

    screen = pilot.app.screen
    assert isinstance(screen, DashboardScreen)
    deadline = time.monotonic() + timeout
    while not screen.session.caught_up:
        assert time.monotonic() < deadline, "the tail worker never caught up"
        await pilot.pause(0.02)
    screen.flush_text()
    screen.flush_plot()
    await pilot.pause()
    return screen


async def wait_for(pilot: Any, cond: Any, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        await pilot.pause(0.05)


def notes(app: Any, severity: str | None = None) -> list[str]:
    return [n.message for n in app._notifications if severity in (None, n.severity)]


def screen_text(app: Any) -> str:
    """The current screen as plain text (what a person sees)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip) for strip in strips)


def assert_same_state(a: Any, b: Any, where: str = "state") -> None:
    """Two folded states (attach_index.state_to_dict) equal, floats to 1e-9 relative: a log
    folded in other chunks sums running means in another order."""
    if isinstance(a, float) and isinstance(b, float):
        assert a == b or abs(a - b) <= 1e-9 * max(1.0, abs(b)), where
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_same_state(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list | tuple) and isinstance(b, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_state(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


class FakeBackend:
    """A control server that accepts every command at `step` and records the requests:
    the cockpit's side of a command, without a training process behind it."""

    def __init__(self, run_dir: Path, step: int = 61) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.step = step
        self.server = ControlServer(RunPaths(run_dir).control)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stop.is_set():
            for pending in self.server.wait(0.05):
                self.requests.append((pending.request.command, pending.request.args))
                pending.accept(step=self.step)

    def __enter__(self) -> FakeBackend:
        self.server.start()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(2)
        self.server.close()
