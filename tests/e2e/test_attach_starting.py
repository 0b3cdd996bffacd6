"""`attach` right after `train --detach` waits for the starting run (once: "events.jsonl: missing")."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import pytest

from growcockpit.cli import main
from growcockpit.cli.attach_wait import wait_for_start
from growcockpit.cli.common import UserError
from growcockpit.protocol.rundir import RunPaths, RunStatus, write_status


def _starting(root: Path) -> RunPaths:
    root.mkdir()
    paths = RunPaths(root)
    paths.log.write_text("importing torch\n")
    return paths


def test_attach_waits_for_the_event_log_and_shows_the_start_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = _starting(tmp_path / "run")
    opened: list[Path] = []

    class App:
        def __init__(self, run_dir: Path, runs_root: Path) -> None:
            opened.append(run_dir)

        def run(self) -> None:
            pass

    monkeypatch.setattr("growcockpit.ui.GrowCockpitApp", App)

    def backend() -> None:
        time.sleep(0.5)
        write_status(paths.status, RunStatus(state="starting", pid=1))
        with open(paths.log, "a") as fh:
            fh.write("tokenizing the corpus\n")
        time.sleep(0.5)
        paths.events.write_text("")

    thread = threading.Thread(target=backend)
    thread.start()
    try:
        assert main(["attach", str(paths.root)]) == 0
    finally:
        thread.join()
    assert opened == [paths.root]
    err = capsys.readouterr().err
    assert "the run is starting" in err and "importing torch" in err


def test_a_backend_that_dies_while_starting_is_one_line_with_its_last_log_line(
    tmp_path: Path,
) -> None:
    paths = _starting(tmp_path / "run")
    paths.log.write_text("importing torch\nImportError: no module named torch\n")
    write_status(paths.status, RunStatus(state="crashed", pid=1))
    with pytest.raises(UserError) as err:
        wait_for_start(paths.root, out=io.StringIO())
    text = str(err.value)
    assert "crashed while starting" in text and "ImportError" in text and "\n" not in text


def test_a_directory_that_is_no_run_is_left_to_the_usual_check(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    wait_for_start(tmp_path / "empty", out=io.StringIO())  # returns at once
    assert main(["attach", str(tmp_path / "empty")]) == 2
