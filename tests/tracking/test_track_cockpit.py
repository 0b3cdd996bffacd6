"""A tracked loop in the cockpit: listed on Home, attached like any run, the trainer's name in
the header, paused, resumed and stopped from the dashboard's keys."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_track_loop import Loop
from ui_fixtures import screen_text

from growcockpit.protocol import read_status
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import DashboardScreen

pytestmark = pytest.mark.slow


async def wait_until(pilot, predicate, what: str, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.1)


async def test_the_cockpit_lists_attaches_and_steers_a_tracked_loop(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = runs / "my-loop"
    loop = Loop(run)
    loop.start()
    try:
        home = GrowCockpitApp(runs_root=runs, workdir=tmp_path, samples=tmp_path)
        async with home.run_test(size=(160, 48)) as pilot:
            await wait_until(pilot, lambda: "my-loop" in screen_text(home), "the run on Home")

        app = GrowCockpitApp(run_dir=run, runs_root=runs, workdir=tmp_path)
        async with app.run_test(size=(160, 48)) as pilot:
            screen = app.screen
            assert isinstance(screen, DashboardScreen)
            await wait_until(
                pilot, lambda: screen.session.state.step >= 3, "steps of the tracked loop"
            )
            await wait_until(
                pilot, lambda: "my-loop  via PyTorch loop" in screen_text(app), "the header"
            )
            await pilot.press("p")
            await wait_until(pilot, lambda: screen.session.state.paused, "the paused event")
            held = loop.steps
            await pilot.pause(0.8)
            assert loop.steps == held, "the loop stepped while paused"
            await pilot.press("p")
            await wait_until(pilot, lambda: loop.steps > held, "steps after resume")
            await pilot.press("s")
            await pilot.pause(0.3)
            await pilot.press("y")
            await wait_until(pilot, lambda: screen.session.state.finished, "run_finished")
            assert screen.session.state.display_status() == "stopped"
        loop.join(timeout=30)
        assert not loop.is_alive() and loop.error is None
        assert read_status(run).state == "stopped"
    finally:
        loop.cockpit.commands.end()
