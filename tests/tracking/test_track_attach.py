"""`growcockpit attach RUN` started before the script reaches `growcockpit.track()`: it
waits for the run directory, saying so, and opens the run once the script creates it;
Ctrl-C leaves; a script (no terminal, no --wait) is told at once."""

from __future__ import annotations

import io
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from run_fixtures import env

import growcockpit
from growcockpit.cli import main
from growcockpit.cli.attach_wait import wait_for_start

pytestmark = pytest.mark.slow


def test_attach_waits_for_a_script_that_has_not_reached_track(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "runs" / "late"
    run.parent.mkdir()
    opened: list[Path] = []

    class App:
        def __init__(self, run_dir: Path, runs_root: Path) -> None:
            opened.append(run_dir)

        def run(self) -> None:
            pass

    monkeypatch.setattr("growcockpit.ui.GrowCockpitApp", App)
    model = torch.nn.Linear(2, 2)
    trackers: list[growcockpit.Tracker] = []

    def script() -> None:  # imports and data first: the run appears a second later
        time.sleep(1.0)
        trackers.append(growcockpit.track(run, model=model, console=False))
        trackers[0].step(loss=1.0)

    thread = threading.Thread(target=script)
    thread.start()
    try:
        assert main(["attach", "--wait", str(run)]) == 0
    finally:
        thread.join()
        for tracker in trackers:
            tracker.close()
    assert opened == [run]
    err = capsys.readouterr().err
    assert "no run here yet; waiting for it to appear" in err and "Ctrl-C leaves" in err


def test_ctrl_c_leaves_the_wait(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "growcockpit", "attach", "--wait", str(tmp_path / "never")],
        stderr=subprocess.PIPE,
        text=True,
        env=env(tmp_path / "cache"),
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()  # the wait has begun
    assert "waiting for it to appear" in line
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    assert "Traceback" not in proc.stderr.read()


def test_without_wait_or_a_terminal_a_missing_run_is_one_line_at_once(tmp_path: Path) -> None:
    out = io.StringIO()
    wait_for_start(tmp_path / "none", out=out)  # returns at once
    assert out.getvalue() == ""
    assert main(["attach", str(tmp_path / "none")]) == 2
