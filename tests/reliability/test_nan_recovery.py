"""A blown-up LR never destroys the last good state, and rollback restores it."""

from __future__ import annotations

import json
import math
import socket
import threading
from pathlib import Path

import pytest
import torch
from run_fixtures import make_trainer, of_type, tiny_plan, wait_events

from growcockpit.backend.state.checkpoint import NonFiniteState, TrainerPosition, save_checkpoint
from growcockpit.cli import main
from growcockpit.protocol import (
    CommandError,
    CommandRequest,
    ControlServer,
    lr_factor_problem,
    read_all,
    send_command,
)
from growcockpit.protocol.events import (
    Checkpoint,
    CommandEvent,
    Event,
    Paused,
    RolledBack,
    Step,
    WarningEvent,
)


@pytest.mark.parametrize(
    "factor", [math.nan, math.inf, -math.inf, 1e9, 1e-300, 0, -1, True, "abc", None]
)
def test_set_lr_refuses_what_would_break_the_scale(factor: object) -> None:
    assert lr_factor_problem(factor)
    with pytest.raises(CommandError):
        CommandRequest("set_lr", {"factor": factor}).validate()


@pytest.mark.parametrize("factor", [0.5, 2, 1e3, 1e-3, "0.25"])
def test_set_lr_accepts_sane_factors(factor: object) -> None:
    assert lr_factor_problem(factor) == ""


def test_set_lr_nan_on_the_wire_is_refused() -> None:
    with pytest.raises(CommandError, match="finite"):
        CommandRequest.decode('{"command": "set_lr", "args": {"factor": NaN}}')


@pytest.mark.parametrize("value", ["nan", "inf", "1e9", "1e-300", "-2", "fast"])
def test_ctl_set_lr_is_one_line_before_any_connection(
    tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ctl", str(tmp_path), "set_lr", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "set_lr" in err and "Traceback" not in err


def test_cockpit_prompt_uses_the_same_check() -> None:
    from growcockpit.ui.screens.command_text import factor_problem as _factor_problem

    assert _factor_problem("nan") and _factor_problem("1e9") and not _factor_problem("0.5")


def _tiny_model() -> torch.nn.Module:
    from transformers import BertConfig, BertForMaskedLM

    cfg = BertConfig(
        vocab_size=50,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
    )
    return BertForMaskedLM(cfg)


def test_non_finite_state_is_never_written_and_prunes_nothing(tmp_path: Path) -> None:
    model = _tiny_model()
    root = tmp_path / "checkpoints"
    for step in (1, 2):
        save_checkpoint(root, model, None, TrainerPosition(step=step), keep=2, loss=3.0)
    with pytest.raises(NonFiniteState, match="loss"):
        save_checkpoint(root, model, None, TrainerPosition(step=3), keep=2, loss=math.nan)
    with torch.no_grad():
        next(model.parameters()).fill_(math.inf)
    with pytest.raises(NonFiniteState, match="weight"):
        save_checkpoint(root, model, None, TrainerPosition(step=4), keep=2, loss=1.0)
    assert sorted(p.name for p in root.iterdir()) == ["step-1", "step-2"]


@pytest.mark.slow
@pytest.mark.usefixtures("gc_cache")
def test_blow_up_pause_rollback_lower_lr_resume(tmp_path: Path) -> None:
    """The issue's scenario, over the real control socket against a live trainer."""
    run = tmp_path / "run"
    run.mkdir()
    control = ControlServer(run / "control.sock")
    control.start()
    trainer = make_trainer(run, tiny_plan(steps=(100000, 20), every_steps=5), control)
    runner = threading.Thread(target=trainer.run, daemon=True)
    runner.start()
    try:
        wait_events(run, lambda ev: any(c.step == 5 for c in of_type(ev, Checkpoint)))
        for _ in range(2):
            assert send_command(run, CommandRequest("set_lr", {"factor": 1000}), 60).accepted
        ack = send_command(run, CommandRequest("set_lr", {"factor": 1000}), 60)
        assert not ack.accepted and "LR scale would become" in ack.reason
        _send_raw(run, '{"id": "n", "command": "set_lr", "args": {"factor": NaN}}')
        events = wait_events(
            run, lambda ev: any(p.reason == "non-finite loss" for p in of_type(ev, Paused))
        )
        nan_step = of_type(events, Step)[-1].step
        assert not math.isfinite(of_type(events, Step)[-1].loss)
        ack = send_command(run, CommandRequest("checkpoint"), 60)
        assert not ack.accepted and "not finite" in ack.reason
        assert f"step-{nan_step}" not in {p.name for p in (run / "checkpoints").iterdir()}

        ack = send_command(run, CommandRequest("rollback", {"step": 5}), 60)
        assert ack.accepted, ack.reason
        assert "rolled back to step-5" in ack.reason and "×1" in ack.reason
        assert trainer.pos.step == 5 and trainer.pos.lr_scale == 1.0
        assert all(bool(torch.isfinite(p).all()) for p in trainer.model.parameters()), (
            "rollback restores finite weights"
        )
        assert send_command(run, CommandRequest("set_lr", {"factor": 0.5}), 60).accepted
        assert send_command(run, CommandRequest("resume"), 60).accepted
        resumed_seq = of_type(read_all(run / "events.jsonl"), CommandEvent)[-1].seq
        events = wait_events(
            run, lambda ev: len([s for s in of_type(ev, Step) if s.seq > resumed_seq]) >= 8
        )
        assert send_command(run, CommandRequest("stop"), 60).accepted
        runner.join(timeout=120)
    finally:
        control.close()
    events = read_all(run / "events.jsonl")
    after = [s for s in of_type(events, Step) if s.seq > resumed_seq]
    assert after[0].step == 6, "training continues from the restored step"
    assert all(math.isfinite(s.loss) for s in after)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    commands = [(c.command, c.accepted) for c in of_type(events, CommandEvent)]
    assert ("rollback", True) in commands and ("set_lr", False) in commands
    aside = run / "checkpoints" / "rolled-back"
    assert aside.is_dir() and all(int(p.name[5:]) > 5 for p in aside.iterdir()), (
        "the abandoned timeline's checkpoints are kept aside, not deleted"
    )
    assert any(
        "no" in w.message and "checkpoint" in w.message for w in of_type(events, WarningEvent)
    )
    (back,) = of_type(events, RolledBack)
    assert (back.step, back.stage, back.lr_scale, back.from_step) == (5, 0, 1.0, nan_step)
    assert back.checkpoint.endswith("step-5") and back.set_aside >= 1
    _cockpit_follows_the_rollback(events, back)


def _cockpit_follows_the_rollback(events: list[Event], back: RolledBack) -> None:
    """The cockpit's fold of this real log: the loss curve goes forward only, and the LR
    scale is the checkpoint's (×1), not the ×1e6 of the abandoned timeline."""
    from growcockpit.session.run_state import RunState

    state = RunState()
    state.apply_all(events)
    assert state.train_loss.xs == sorted(set(state.train_loss.xs))
    assert state.lr_scale == 0.5, "×1 restored, then set_lr 0.5"
    marks = [(m.kind, m.step) for m in state.markers]
    at = marks.index(("rollback", back.step))
    assert all(step <= back.step for _, step in marks[:at]), "abandoned markers are gone"


def _send_raw(run: Path, line: str) -> dict[str, object]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(run / "control.sock"))
        sock.sendall((line + "\n").encode())
        reply = sock.makefile().readline()
    answer: dict[str, object] = json.loads(reply)
    assert answer.get("accepted") is False, answer
    return answer


@pytest.mark.parametrize("value", ["abc", "-3", "step-x", "1" * 30])
def test_ctl_rollback_needs_a_checkpoint_step(
    tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ctl", str(tmp_path), "rollback", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "checkpoint step" in err


def test_rollback_step_is_checked_on_the_wire() -> None:
    CommandRequest("rollback", {"step": 200}).validate()
    CommandRequest("rollback").validate()
    for bad in (-1, "200", 1.5, True):
        with pytest.raises(CommandError, match="rollback"):
            CommandRequest("rollback", {"step": bad}).validate()
