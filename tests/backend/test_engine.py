"""The stage engine in-process: manual advance, non-finite loss, gradient accumulation."""

from __future__ import annotations

import math
import re
import threading
import time
from pathlib import Path

import pytest
import torch
from repo_paths import TESTS

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.data.blocks import load_blocks
from growcockpit.backend.loop.engine import Trainer
from growcockpit.backend.loop.step_window import StepOutcome
from growcockpit.plan import loads_plan
from growcockpit.protocol import (
    CommandRequest,
    ControlServer,
    EventLog,
    RunPaths,
    read_all,
    send_command,
)
from growcockpit.protocol.events import AwaitingAdvance, Error, Paused, StageStarted, Step

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("gc_cache")]

TINY = (TESTS / "plans" / "tiny.toml").read_text()


def make_trainer(tmp_path: Path, text: str, control: ControlServer | None = None) -> Trainer:
    plan = loads_plan(text, "test.toml")
    paths = RunPaths(tmp_path)
    events = EventLog(paths.events)
    reporter = RunReporter(events.append, control)
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    torch.manual_seed(plan.seed)
    return Trainer(plan, tmp_path, data, reporter, torch.device("cpu"))


def test_non_finite_loss_pauses_with_an_error(tmp_path: Path) -> None:
    trainer = make_trainer(tmp_path, TINY)
    trainer.enter_stage()
    trainer.after_step(StepOutcome(math.nan, 0.0, 0))
    assert trainer.paused
    events = read_all(tmp_path / "events.jsonl")
    errors = [e for e in events if isinstance(e, Error)]
    assert errors and "nan" in errors[0].message.lower() and "step 0" in errors[0].message
    assert any(isinstance(e, Paused) and e.reason == "non-finite loss" for e in events)


def test_manual_advance_waits_for_the_command(tmp_path: Path) -> None:
    text = re.sub(r"^steps = 20$", 'steps = 3\nadvance = "manual"', TINY, count=1, flags=re.M)
    control = ControlServer(tmp_path / "control.sock")
    control.start()
    trainer = make_trainer(tmp_path, text, control)
    runner = threading.Thread(target=trainer.run, daemon=True)
    runner.start()
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            events = read_all(tmp_path / "events.jsonl")
            if any(isinstance(e, AwaitingAdvance) and "`advance`" in e.message for e in events):
                break
            time.sleep(0.05)
        else:
            raise AssertionError("no waiting event")
        time.sleep(0.5)
        steps = [e for e in read_all(tmp_path / "events.jsonl") if isinstance(e, Step)]
        assert [s.step for s in steps] == [1, 2, 3], "a manual stage must not train past its steps"
        ack = send_command(tmp_path, CommandRequest("advance"), timeout=30)
        assert ack.accepted
        ack = send_command(tmp_path, CommandRequest("stop"), timeout=60)
        assert ack.accepted
        runner.join(timeout=60)
    finally:
        control.close()
    events = read_all(tmp_path / "events.jsonl")
    assert [e.index for e in events if isinstance(e, StageStarted)] == [0, 1]


def test_gradient_accumulation_counts_every_micro_batch(tmp_path: Path) -> None:
    text = re.sub(r"^steps = 20$", "steps = 2", TINY, flags=re.M)
    text = text.replace("batch_size = 8", "batch_size = 4\ngrad_accum_steps = 2")
    trainer = make_trainer(tmp_path, text)
    assert trainer.run() == "completed"
    steps = [e for e in read_all(tmp_path / "events.jsonl") if isinstance(e, Step)]
    assert [s.tokens for s in steps] == [k * 2 * 4 * 64 for k in range(1, 5)]
    assert all(math.isfinite(s.loss) for s in steps)


@pytest.mark.parametrize("optim", ['name = "lamb"', 'precision = "bf16"'])
def test_lamb_and_bf16_autocast_train(tmp_path: Path, optim: str) -> None:
    text = re.sub(r"^steps = 20$", "steps = 3", TINY, flags=re.M)
    text = text.replace("[optim]\n", f"[optim]\n{optim}\n")
    trainer = make_trainer(tmp_path, text)
    assert trainer.run() == "completed"
    steps = [e for e in read_all(tmp_path / "events.jsonl") if isinstance(e, Step)]
    assert len(steps) == 6 and all(math.isfinite(s.loss) for s in steps)
    assert type(trainer.optimizer).__name__ == ("Lamb" if "lamb" in optim else "AdamW")


def test_lamb_update_is_trust_ratio_scaled_adam() -> None:
    from growcockpit.backend.loop.lamb import Lamb

    w = torch.nn.Parameter(torch.tensor([3.0, 4.0]))
    w.grad = torch.tensor([0.5, -1.0])
    Lamb([w], lr=0.1, weight_decay=0.0).step()
    # first step: m̂ = g, v̂ = g², update = g/|g| = sign(g) (eps aside); trust = |w| / |update| = 5/√2
    expected = torch.tensor([3.0, 4.0]) - 0.1 * (5 / 2**0.5) * torch.tensor([1.0, -1.0])
    torch.testing.assert_close(w.detach(), expected, atol=1e-5, rtol=0)


def test_budget_fill_stage_trains_the_fitted_steps(tmp_path: Path) -> None:
    from growcockpit.plan import fit_budget

    text = re.sub(r"^steps = 20$", "steps = 3", TINY, count=1, flags=re.M)
    text = text.replace("\n[[stages]]", "\n[budget]\nbaseline_steps = 5\n\n[[stages]]", 1)
    text = text.replace('train = "new"\nsteps = 20', 'train = "new"')  # fitted, not written
    trainer = make_trainer(tmp_path, text)
    fit = fit_budget(trainer.plan)
    assert fit is not None and fit.ok and fit.fitted_steps > 1
    assert trainer.run() == "completed"
    steps = [e for e in read_all(tmp_path / "events.jsonl") if isinstance(e, Step)]
    assert len(steps) == 3 + fit.fitted_steps == trainer.plan.total_steps
    assert sum(1 for s in steps if s.stage == 1) == fit.fitted_steps
