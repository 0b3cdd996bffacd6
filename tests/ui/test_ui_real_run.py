"""The dashboard on a real tiny backend: launch through RunClient, watch, pause, resume, stop."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest
from repo_paths import TESTS

from growcockpit.protocol import read_status
from growcockpit.session.run_client import RunClient
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import DashboardScreen

pytestmark = pytest.mark.slow

TINY = TESTS / "plans" / "tiny.toml"


async def wait_until(pilot, predicate, what: str, timeout: float = 90.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.1)


async def test_dashboard_steers_a_real_run(tmp_path: Path, gc_cache: Path) -> None:
    plan = tmp_path / "tiny-long.toml"
    plan.write_text(re.sub(r"^steps = 20$", "steps = 100000", TINY.read_text(), flags=re.M))
    run_dir = RunClient.launch(plan, tmp_path / "runs")
    try:
        app = GrowCockpitApp(run_dir=run_dir, runs_root=tmp_path / "runs", workdir=tmp_path)
        async with app.run_test(size=(160, 48)) as pilot:
            screen = app.screen
            assert isinstance(screen, DashboardScreen)
            await wait_until(
                pilot, lambda: screen.session.state.step >= 3, "live steps from the backend"
            )
            await pilot.press("p")
            await wait_until(pilot, lambda: screen.session.state.paused, "the paused event")
            paused_at = screen.session.state.step
            await pilot.pause(1.0)
            assert screen.session.state.step == paused_at, "no steps while paused"
            await pilot.press("p")
            await wait_until(
                pilot, lambda: screen.session.state.step > paused_at, "steps after resume"
            )
            await pilot.press("s")
            await pilot.pause(0.3)
            await pilot.press("y")
            await wait_until(pilot, lambda: screen.session.state.finished, "run_finished")
            assert screen.session.state.display_status() == "stopped"
        assert read_status(run_dir).state == "stopped"
    finally:
        status = run_dir / "status.json"
        if status.exists():
            pid = read_status(run_dir).pid
            if read_status(run_dir).is_live():
                os.kill(pid, signal.SIGKILL)
