"""After a blow-up, one `ctl rollback --lr-scale` line gets the run training on.

The fault-table case: ×1000 LR twice via set_lr blows the tiny run up; the pause's
error names `rollback` and the checkpoint step to return to, and `rollback`
takes the LR scale to train on with (the checkpoint's own ×1 scale is kept
otherwise), so the run continues finite after a single command.
"""

from __future__ import annotations

import math
import re
import threading
from pathlib import Path

import pytest
from run_fixtures import make_trainer, of_type, tiny_plan, wait_events

from growcockpit.cli import main
from growcockpit.protocol import CommandError, CommandRequest, ControlServer, send_command
from growcockpit.protocol.events import Error, Paused, RolledBack, Step


def test_rollback_lr_scale_is_checked_on_the_wire() -> None:
    CommandRequest("rollback", {"lr_scale": 0.1}).validate()
    CommandRequest("rollback", {"step": 5, "lr_scale": 2}).validate()
    for bad in (math.nan, math.inf, 0, -1, 1e9, True, "x"):
        with pytest.raises(CommandError, match="lr_scale"):
            CommandRequest("rollback", {"lr_scale": bad}).validate()


@pytest.mark.parametrize(
    "argv",
    [
        ["rollback", "--lr-scale", "nan"],
        ["rollback", "--lr-scale", "0"],
        ["pause", "--lr-scale", "1"],
    ],
)
def test_ctl_lr_scale_is_one_line_before_any_connection(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ctl", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--lr-scale" in err and "Traceback" not in err


@pytest.mark.slow
@pytest.mark.usefixtures("gc_cache")
def test_lr_blow_up_then_one_ctl_line_trains_on_finite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    control = ControlServer(run / "control.sock")
    control.start()
    trainer = make_trainer(run, tiny_plan(steps=(100000, 20), every_steps=5), control)
    runner = threading.Thread(target=trainer.run, daemon=True)
    runner.start()
    try:
        wait_events(run, lambda ev: any(s.step >= 5 for s in of_type(ev, Step)))
        for _ in range(2):
            assert send_command(run, CommandRequest("set_lr", {"factor": 1000}), 60).accepted
        events = wait_events(
            run, lambda ev: any(p.reason == "non-finite loss" for p in of_type(ev, Paused))
        )
        error = of_type(events, Error)[-1]
        assert "rollback" in error.message and f"step {error.step}" in error.message
        named = re.search(r"rollback (\d+) --lr-scale", error.message)
        assert named is not None, error.message
        target = int(named.group(1))  # a checkpoint (every 5 steps) before the blow-up
        assert target % 5 == 0 and 0 < target < (error.step or 0), error.message
        raised = trainer.lr_raised_at
        assert raised is not None and target <= raised, "a checkpoint from before the ×1000"
        capsys.readouterr()
        assert main(["ctl", str(run), "rollback", "--lr-scale", "1"]) == 0  # the one line
        assert "accepted" in capsys.readouterr().out
        assert trainer.pos.lr_scale == 1.0
        assert send_command(run, CommandRequest("resume"), 60).accepted
        (back,) = of_type(read_events(run), RolledBack)
        events = wait_events(
            run, lambda ev: len([s for s in of_type(ev, Step) if s.seq > back.seq]) >= 6
        )
        assert send_command(run, CommandRequest("stop"), 60).accepted
        runner.join(timeout=120)
    finally:
        control.close()
    after = [s for s in of_type(read_events(run), Step) if s.seq > back.seq]
    assert len(after) >= 6 and all(math.isfinite(s.loss) for s in after)
    assert back.lr_scale == 1.0, "the rolled_back event carries the chosen scale"
    assert back.step == target, "no step given while paused: the advised checkpoint"


def read_events(run: Path) -> list[object]:
    from growcockpit.protocol import read_all

    return list(read_all(run / "events.jsonl"))
