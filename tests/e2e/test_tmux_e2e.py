"""End to end as a person would: the real `growcockpit` command in tmux, read off the screen.

Design a plan from scratch on the home screen (`n`: set the first stage's depth,
add stages, set a freeze policy, save it), launch it, pause, advance, leave with
`q` (training must go on), re-attach with `growcockpit attach`, resume and stop.
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
        """One key at a time, like a person: a burst can split an escape sequence.

        A lone Escape followed quickly by a key reaches the app as Alt+key (a terminal
        cannot tell them apart when both bytes arrive in one read, as they do on a busy
        machine), so a person's pause after Escape is kept longer."""
        for key in keys:
            subprocess.run(["tmux", "send-keys", "-t", self.name, key], check=True)
            time.sleep(1.0 if key == "Escape" else 0.15)

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


def wait_for_status(
    run_dir: Path, check: Callable[[dict[str, object]], bool], timeout: float = 60.0
) -> dict[str, object]:
    """status.json once `check` holds (or as it is at the timeout)."""
    deadline = time.time() + timeout
    while True:
        status: dict[str, object] = json.loads((run_dir / "status.json").read_text())
        if check(status) or time.time() > deadline:
            return status
        time.sleep(0.2)


def only_run(runs: Path) -> Path:
    dirs = [p for p in runs.iterdir() if p.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_design_launch_pause_advance_leave_attach_stop(tmp_path: Path, gc_cache: Path) -> None:
    env = {
        "GROWCOCKPIT_CACHE": str(gc_cache),
        "HF_HUB_OFFLINE": "1",
        "TERM": "xterm-256color",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    cockpit = Tmux(tmp_path, env)
    viewer = Tmux(tmp_path, env)
    try:
        cockpit.start(GROWCOCKPIT)
        screen = cockpit.wait_for(
            lambda s: "cpu-demo" in s and "runs in" in s, "the home screen", 30
        )
        assert "no runs yet" in screen

        # design a plan from scratch
        cockpit.keys("n")
        cockpit.wait_for(lambda s: "stage 1: stage-1" in s, "the designer on a new plan", 20)
        cockpit.keys("Tab", "Tab", "Tab")  # name, enter, layers
        cockpit.keys("End", "C-u", "2")
        cockpit.wait_for(lambda s: "all: 0-1" in s, "stage 1 at depth 2", 10)
        cockpit.keys("Escape")
        cockpit.keys("a")  # grow to 4 by stacking, training the new layers
        cockpit.wait_for(
            lambda s: "stack (top)" in s and "new: 2-3" in s, "the added grow stage", 10
        )
        cockpit.keys(*["Tab"] * 8)  # name enter source init ramp layers width train
        cockpit.keys("Enter")  # open the train policy list: all new none top:1 top:2 top:3
        cockpit.keys("Down", "Down", "Down")
        cockpit.keys("Enter")
        cockpit.wait_for(lambda s: "top:2: 2-3" in s, "the freeze policy top:2", 10)
        cockpit.keys("Escape")
        cockpit.keys("a")  # a final all-layer stage at full depth
        screen = cockpit.wait_for(
            lambda s: "all-layers" in s and "all: 0-3" in s, "the third stage", 10
        )
        assert "✔ valid" in screen
        cockpit.keys("C-s")
        cockpit.wait_for(lambda s: "Save the plan as" in s, "the save-as prompt", 10)
        cockpit.keys("Enter")
        saved_file = tmp_path / "my-plan.toml"
        cockpit.wait_for(
            lambda s: "my-plan.toml" in s and "modified" not in s and saved_file.exists(),
            "the saved plan",
            20,
        )
        saved = saved_file.read_text()
        assert 'train = "top:2"' in saved and saved.count("[[stages]]") == 3

        cockpit.keys("l")
        cockpit.wait_for(
            lambda s: "Launch (Enter)" in s and "processes" in s, "the launch dialog", 10
        )
        cockpit.keys("Enter")
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
        cockpit.wait_for(lambda s: "my-plan" not in s, "the cockpit to close", 20)
        status = wait_for_status(run_dir, lambda s: s["stage"] == 1)  # the grow may still run
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
        assert wait_for_status(run_dir, lambda s: s["state"] == "stopped")["state"] == "stopped"
        assert (run_dir / "final" / "config.json").exists()
    finally:
        cockpit.kill()
        viewer.kill()
        for status_file in (tmp_path / "runs").glob("*/status.json"):
            pid = json.loads(status_file.read_text()).get("pid", 0)
            if pid and pid_alive(pid):
                os.kill(pid, 9)
