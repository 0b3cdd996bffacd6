"""SVG snapshots of the cockpit (pytest-textual-snapshot). Regenerate after a deliberate
UI change with `pytest tests/test_ui_snapshots.py --snapshot-update` and review the SVGs.

Only fixed data goes in: the recorded run has fixed timestamps and is finished, so the
elapsed time comes from events, never from the wall clock.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from textual.pilot import Pilot
from ui_fixtures import write_plan, write_recorded_run

from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import DashboardScreen


async def _caught_up(pilot: Pilot[None]) -> None:
    screen = pilot.app.screen
    assert isinstance(screen, DashboardScreen)
    deadline = time.monotonic() + 10
    while not screen.caught_up:
        assert time.monotonic() < deadline
        await pilot.pause(0.02)
    screen.flush_text()
    screen.flush_plot()
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_dashboard_finished_run(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    run_dir = write_recorded_run(tmp_path / "run")
    app = GrowCockpitApp(run_dir=run_dir, clock=lambda: 0.0)
    assert snap_compare(app, terminal_size=size, run_before=_caught_up)


def test_plan_screen(snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)  # the plan path is shown relative to the working directory
    app = GrowCockpitApp(plan_path=write_plan(tmp_path / "mslt-snapshot.toml"))
    assert snap_compare(app, terminal_size=(160, 48))
