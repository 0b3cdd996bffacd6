"""A run's final validation loss is measured at its last step, however the run ends."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from run_fixtures import make_trainer, tiny_plan

from growcockpit.protocol import CommandRequest, ControlServer, read_all, send_command
from growcockpit.protocol.events import Eval, RunFinished, Step

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("gc_cache")]


def test_a_completed_run_is_evaluated_at_its_last_step(tmp_path: Path) -> None:
    trainer = make_trainer(tmp_path, tiny_plan(steps=(20, 13)))  # evaluations every 10 steps
    assert trainer.run() == "completed"
    events = read_all(tmp_path / "events.jsonl")
    last = [e for e in events if isinstance(e, RunFinished)][0].step
    evals = [e.step for e in events if isinstance(e, Eval)]
    assert last == 33
    assert evals[-1] == 33, f"final evaluation at step {evals[-1]}, not the last step {last}"
    assert evals.count(30) == 1 and evals.count(33) == 1


def test_a_run_ending_on_an_evaluation_step_is_not_evaluated_twice(tmp_path: Path) -> None:
    trainer = make_trainer(tmp_path, tiny_plan(steps=(20, 10)))
    trainer.run()
    evals = [e.step for e in read_all(tmp_path / "events.jsonl") if isinstance(e, Eval)]
    assert evals == [10, 20, 30]


def test_a_stopped_run_is_evaluated_where_it_stopped(tmp_path: Path) -> None:
    """A race rung stops its run: the rung's loss is measured where the run stopped."""
    control = ControlServer(tmp_path / "control.sock")
    control.start()
    trainer = make_trainer(tmp_path, tiny_plan(steps=(2000, 10)), control)
    runner = threading.Thread(target=trainer.run, daemon=True)
    runner.start()
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            steps = [e for e in read_all(tmp_path / "events.jsonl") if isinstance(e, Step)]
            if steps and steps[-1].step >= 13:
                break
            time.sleep(0.05)
        assert send_command(tmp_path, CommandRequest("stop"), timeout=60).accepted
        runner.join(timeout=60)
    finally:
        control.close()
    events = read_all(tmp_path / "events.jsonl")
    finished = [e for e in events if isinstance(e, RunFinished)][0]
    assert finished.status == "stopped"
    assert [e for e in events if isinstance(e, Eval)][-1].step == finished.step
