"""A realistic recorded run for cockpit tests: MSLT on a small BERT, 2 -> 4 layers.

Fixed timestamps (no wall clock), written with the real event classes and the
real `EventLog`, so the cockpit reads exactly what a backend would write.
"""

from __future__ import annotations

import math
from pathlib import Path

from growcockpit.protocol import (
    Checkpoint,
    CommandEvent,
    Eval,
    Event,
    EventLog,
    Grow,
    LayerStat,
    LayerStats,
    Paused,
    Resumed,
    RunFinished,
    RunStarted,
    StageStarted,
    Step,
    System,
    Warning,
)

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
            at(Warning(message="loss spiked after the grow (+0.30)", step=step))
    if finished and upto_step is None:
        t += 1.0
        at(Checkpoint(step=last, path="checkpoints/step-80", reason="final"))
        at(RunFinished(status="completed", step=last, final_path="final"))
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
