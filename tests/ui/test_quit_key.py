"""`q` goes back where the user came from: Home for a dashboard opened from Home, out of
the cockpit for a run attached directly (`growcockpit attach RUN`)."""

from __future__ import annotations

from pathlib import Path

from ui_fixtures import settle, write_recorded_run

from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import DashboardScreen, HomeScreen

SIZE = (160, 48)


async def test_q_on_a_dashboard_opened_from_home_goes_back_home(tmp_path: Path) -> None:
    write_recorded_run(tmp_path / "runs" / "r")
    app = GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path, samples=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen) and app.is_running
    # attached directly (growcockpit attach RUN), `q` leaves the cockpit
    app = GrowCockpitApp(run_dir=tmp_path / "runs" / "r")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running
