"""`growcockpit status` of a crashed run says why (it once said only "crashed")."""

from __future__ import annotations

from pathlib import Path

import pytest

from growcockpit.cli import main
from growcockpit.protocol import EventLog
from growcockpit.protocol.events import Error, RunFinished, RunStarted
from growcockpit.protocol.rundir import RunPaths, RunStatus, write_status


def _crashed(root: Path) -> RunPaths:
    root.mkdir()
    paths = RunPaths(root)
    write_status(paths.status, RunStatus(run_id="r", state="crashed", num_stages=1))
    return paths


def test_the_recorded_error_is_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = _crashed(tmp_path / "r")
    log = EventLog(paths.events)
    log.append(RunStarted(run_id="r"))
    log.append(Error(message="RuntimeError: CUDA out of memory", step=7))
    log.append(RunFinished(status="crashed", step=7, message="RuntimeError: CUDA out of memory"))
    log.close()
    assert main(["status", str(paths.root)]) == 0
    assert "reason: RuntimeError: CUDA out of memory" in capsys.readouterr().out


def test_a_killed_backend_points_at_its_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = _crashed(tmp_path / "r")
    paths.events.write_text("")
    paths.log.write_text("step 10 loss 5.0\nKilled\n")
    assert main(["status", str(paths.root)]) == 0
    assert "reason: backend.log ends: Killed" in capsys.readouterr().out
