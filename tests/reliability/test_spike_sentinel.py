"""A loss spike is caught before it reaches the weights, and one ctl line recovers.

A tiny run whose spike window is full (10 steps) gets `set_lr ×1000`: the
first update at that LR goes in (nothing can foresee it), the loss of the
next step spikes, and the sentinel skips that update on the device: the
weights after it are bitwise the weights before it. The run pauses with an
error naming the step, the loss, `rollback` and the newest checkpoint from
before the LR was raised (later ones hold weights trained at ×1000);
`growcockpit ctl RUN rollback --lr-scale 1` then brings it back training,
finite.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any

import pytest
import torch
from run_fixtures import make_trainer, of_type, tiny_plan, wait_events

from growcockpit.backend.loop.engine import Trainer
from growcockpit.cli import main
from growcockpit.plan import loads_plan
from growcockpit.protocol import CommandRequest, ControlServer, read_all, send_command
from growcockpit.protocol.events import (
    Checkpoint,
    CommandEvent,
    Error,
    Paused,
    RolledBack,
    Step,
)

WINDOW = 10


def spike_plan(window: str = f"spike_window = {WINDOW}") -> str:
    text = tiny_plan(steps=(100000, 20), every_steps=5)
    return text.replace("[metrics]\n", f"[metrics]\n{window}\n", 1)


def test_the_plan_keys_and_their_checks() -> None:
    plan = loads_plan(spike_plan(), "t.toml")
    assert (plan.metrics.spike_z, plan.metrics.spike_grad_z) == (8.0, 0.0), "the defaults"
    assert plan.metrics.spike_window == WINDOW
    for bad in ("spike_z = -1", "spike_window = -5", "spike_grad_z = nan"):
        text = spike_plan(bad)
        with pytest.raises(Exception, match=bad.split(" ")[0]):
            loads_plan(text, "t.toml")


def record_weights_before_each_update(trainer: Trainer) -> dict[int, dict[str, torch.Tensor]]:
    """Step number → the weights just before that step's update (the last few steps)."""
    before: dict[int, dict[str, torch.Tensor]] = {}
    runner = trainer.steps
    real = runner.update

    def update(t: Any, *args: Any) -> Any:
        step = t.pos.step + 1  # the number its Step event carries
        before[step] = {k: v.detach().clone() for k, v in t.model.state_dict().items()}
        before.pop(step - 5, None)
        return real(t, *args)

    runner.update = update  # type: ignore[method-assign]
    return before


@pytest.mark.slow
@pytest.mark.usefixtures("gc_cache")
def test_lr_spike_is_skipped_paused_and_one_ctl_line_recovers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    control = ControlServer(run / "control.sock")
    control.start()
    trainer = make_trainer(run, spike_plan(), control)
    before = record_weights_before_each_update(trainer)
    runner = threading.Thread(target=trainer.run, daemon=True)
    runner.start()
    try:
        wait_events(run, lambda ev: any(s.step >= WINDOW + 5 for s in of_type(ev, Step)))
        assert send_command(run, CommandRequest("set_lr", {"factor": 1000}), 60).accepted
        events = wait_events(run, lambda ev: of_type(ev, Paused))
        (paused,) = of_type(events, Paused)
        assert paused.reason == "loss spike"
        error = of_type(events, Error)[-1]
        spike_step = error.step
        assert spike_step is not None and trainer.pos.step == spike_step
        assert trainer.paused
        (raise_lr,) = [c for c in of_type(events, CommandEvent) if c.command == "set_lr"]
        saved = [c.step for c in of_type(events, Checkpoint) if c.step <= raise_lr.step]
        good = max(saved)  # later checkpoints hold weights trained at the raised LR
        assert good >= spike_step - 7, "the spike came within a few steps of the raise"
        message = error.message
        assert f"loss spike at step {spike_step}" in message, message
        assert "robust SDs above the median" in message and "update skipped" in message
        assert f"of the last {WINDOW} steps (metrics.spike_z = 8)" in message, message
        # a tenth of the checkpoint's own scale (1), not of the ×1000 that blew up
        assert f"`growcockpit ctl {run} rollback {good} --lr-scale 0.1`, then " in message
        assert f"then `growcockpit ctl {run} resume`" in message, message
        steps = {s.step: s.loss for s in of_type(events, Step)}
        assert f"loss {steps[spike_step]:.4g}" in message, "the message names the value"
        assert math.isfinite(steps[spike_step]) and steps[spike_step] > 2 * steps[spike_step - 2]
        now = trainer.model.state_dict()
        assert all(torch.equal(now[k], v) for k, v in before[spike_step].items()), (
            "the spiking update never reached the weights"
        )
        assert not all(torch.equal(now[k], v) for k, v in before[spike_step - 1].items()), (
            "the step before (the first at ×1000) did update: the guard is the spike's only"
        )

        capsys.readouterr()
        assert main(["ctl", str(run), "rollback", "--lr-scale", "1"]) == 0  # the one line
        ack = capsys.readouterr().out
        assert "accepted" in ack and f"still paused: `growcockpit ctl {run} resume`" in ack
        assert trainer.pos.lr_scale == 1.0
        assert send_command(run, CommandRequest("resume"), 60).accepted
        (back,) = of_type(read_all(run / "events.jsonl"), RolledBack)
        wait_events(run, lambda ev: len([s for s in of_type(ev, Step) if s.seq > back.seq]) >= 6)
        assert send_command(run, CommandRequest("stop"), 60).accepted
        runner.join(timeout=120)
    finally:
        control.close()
    events = read_all(run / "events.jsonl")
    after = [s for s in of_type(events, Step) if s.seq > back.seq]
    assert back.step == good and back.lr_scale == 1.0
    assert len(after) >= 6 and all(math.isfinite(s.loss) for s in after)
    assert len(of_type(events, Paused)) == 1, "no second pause after the rollback"
