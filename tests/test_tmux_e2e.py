"""End to end as a person would: the real `growcockpit` command in tmux, read off the screen.

Launch the CPU demo plan from the cockpit, pause, advance, leave with `q`
(training must go on), re-attach with `growcockpit attach`, resume and stop.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from growcockpit.protocol import pid_alive

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)"
    ),
]

GROWCOCKPIT = str(Path(sys.executable).parent / "growcockpit")


class Tmux:
    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd = cwd
        self.env = env
        self.name = f"gc-{uuid.uuid4().hex[:8]}"

    def start(self, command: str) -> None:
        exports = " ".join(f"{k}={v}" for k, v in self.env.items())
        subprocess.run(
            [
                "tmux",
                "new-session",
                "-d",
                "-s",
                self.name,
                "-x",
                "160",
                "-y",
                "48",
                "-c",
                str(self.cwd),
                f"env {exports} {command}; sleep 30",
            ],
            check=True,
        )

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def screen(self) -> str:
        out = subprocess.run(
            ["tmux", "capture-pane", "-t", self.name, "-p"], capture_output=True, text=True
        )
        return out.stdout

    def wait_for(self, check: Callable[[str], bool], what: str, timeout: float = 120.0) -> str:
        deadline = time.time() + timeout
        screen = ""
        while time.time() < deadline:
            screen = self.screen()
            if check(screen):
                return screen
            time.sleep(0.25)
        raise AssertionError(f"timed out waiting for {what}; screen:\n{screen}")

    def kill(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def step_on(screen: str) -> int:
    match = re.search(r"step (\d+)/\d+", screen)
    return int(match.group(1)) if match else -1


def only_run(runs: Path) -> Path:
    dirs = [p for p in runs.iterdir() if p.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_design_launch_pause_advance_leave_attach_stop(tmp_path: Path, gc_cache: Path) -> None:
    env = {"GROWCOCKPIT_CACHE": str(gc_cache), "HF_HUB_OFFLINE": "1", "TERM": "xterm-256color"}
    cockpit = Tmux(tmp_path, env)
    viewer = Tmux(tmp_path, env)
    try:
        cockpit.start(GROWCOCKPIT)
        screen = cockpit.wait_for(
            lambda s: "grow-4" in s and "all-layers" in s, "the demo plan's stage table", 30
        )
        assert "stack (top)" in screen and "new: 2-3" in screen

        cockpit.keys("l")
        cockpit.wait_for(
            lambda s: "live" in s and step_on(s) >= 3, "training steps on the dashboard"
        )
        run_dir = only_run(tmp_path / "runs")

        cockpit.keys("p")
        cockpit.wait_for(lambda s: "paused" in s, "paused status")
        cockpit.keys("g")
        cockpit.wait_for(lambda s: "Advance (y)" in s and "grow-4" in s, "the advance confirmation")
        cockpit.keys("y")
        screen = cockpit.wait_for(lambda s: "stage 2/3" in s, "stage 2 after advance")
        assert "grow-4" in screen

        cockpit.keys("q")
        cockpit.wait_for(lambda s: "cpu-demo" not in s, "the cockpit to close", 20)
        status = json.loads((run_dir / "status.json").read_text())
        assert (status["state"], status["stage"]) == ("paused", 1)
        assert pid_alive(status["pid"]), "training must survive leaving the cockpit"

        viewer.start(f"{GROWCOCKPIT} attach {run_dir}")
        screen = viewer.wait_for(
            lambda s: "stage 2/3" in s and "paused" in s, "the re-attached dashboard"
        )
        assert "grow" in screen.lower()
        viewer.keys("p")
        viewer.wait_for(lambda s: "live" in s, "live again after resume")
        viewer.keys("s")
        viewer.wait_for(lambda s: "Stop (y)" in s, "the stop confirmation")
        viewer.keys("y")
        viewer.wait_for(lambda s: "stopped" in s, "stopped status")
        deadline = time.time() + 60
        while (
            time.time() < deadline
            and json.loads((run_dir / "status.json").read_text())["state"] != "stopped"
        ):
            time.sleep(0.2)
        assert json.loads((run_dir / "status.json").read_text())["state"] == "stopped"
        assert (run_dir / "final" / "config.json").exists()
    finally:
        cockpit.kill()
        viewer.kill()
        for status_file in (tmp_path / "runs").glob("*/status.json"):
            pid = json.loads(status_file.read_text()).get("pid", 0)
            if pid and pid_alive(pid):
                os.kill(pid, 9)
