"""Output to a reader that leaves (`growcockpit status RUN | head -1`) ends
quietly: no BrokenPipeError traceback, the exit status of a process SIGPIPE stopped."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import TESTS

EXIT_PIPE = 141  # 128 + SIGPIPE, as a process the signal stopped


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_status_into_a_closed_pipe_is_quiet(tmp_path: Path, extra: list[str]) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(TESTS / "data" / "ddp2-run", run_dir)
    proc = subprocess.Popen(
        [sys.executable, "-m", "growcockpit", "status", str(run_dir), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # `head -1` done before the status is printed
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == EXIT_PIPE, err
    assert "Traceback" not in err and "BrokenPipe" not in err and err == "", err


def test_status_into_head_prints_the_first_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(TESTS / "data" / "ddp2-run", run_dir)
    res = subprocess.run(
        f"{sys.executable} -m growcockpit status {run_dir} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0 and len(res.stdout.splitlines()) == 1
    assert "Traceback" not in res.stderr and "BrokenPipe" not in res.stderr
