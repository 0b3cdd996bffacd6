"""The plan screen: shows a plan's stages and cost, launches it, then shows the dashboard."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_fixtures import write_plan, write_recorded_run

from growcockpit.plan import load_plan
from growcockpit.resources import sample_plan
from growcockpit.ui import GrowCockpitApp, RunClient
from growcockpit.ui.screens import DashboardScreen, PlanScreen
from growcockpit.ui.widgets import EventLogPanel, RunHeader, StageTable
from growcockpit.ui.widgets.stage_table import stage_rows

SIZE = (160, 48)


async def test_plan_screen_shows_cpu_demo() -> None:
    app = GrowCockpitApp(plan_path=sample_plan("cpu-demo"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PlanScreen)
        table = screen.query_one(StageTable)
        assert table.row_count == 3
        plan = load_plan(sample_plan("cpu-demo"))
        rows = [table.get_row_at(i) for i in range(3)]
        assert [r[1] for r in rows] == ["shallow", "grow-4", "all-layers"]
        assert rows[1][2] == "stack (top)" and rows[1][3] == "4"
        assert rows[1][4] == "new: 2-3" and rows[2][4] == "all: 0-3"
        assert [r[5] for r in rows] == [str(s.steps) for s in plan.stages]
        assert rows[1][7] == "auto"
        assert rows[0][8].endswith("×")  # relative step cost from estimate_cost
        assert str(screen.query_one("#plan-title").render()) == "cpu-demo"
        cost = str(screen.query_one("#plan-cost").render())
        assert "full-depth baseline" in cost and "faster" in cost
        assert not screen.query_one("#launch").disabled


async def test_no_arguments_opens_the_cpu_demo_plan() -> None:
    app = GrowCockpitApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, PlanScreen)
        assert app.screen.plan is not None and app.screen.plan.name == "cpu-demo"


async def test_launch_switches_to_the_dashboard(tmp_path: Path) -> None:
    launched: list[tuple[Path, Path]] = []

    def fake_launch(plan_path: Path, runs_root: Path) -> Path:
        launched.append((plan_path, runs_root))
        return write_recorded_run(runs_root / "cpu-demo-x", finished=False, upto_step=5)

    app = GrowCockpitApp(
        plan_path=sample_plan("cpu-demo"), runs_root=tmp_path / "runs", launcher=fake_launch
    )
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("l")
        await pilot.pause()
        assert launched == [(sample_plan("cpu-demo"), tmp_path / "runs")]
        assert isinstance(app.screen, DashboardScreen)
        assert app.screen.run_dir == tmp_path / "runs" / "cpu-demo-x"


async def test_launch_button_works_too(tmp_path: Path) -> None:
    calls: list[Path] = []

    def fake_launch(plan_path: Path, runs_root: Path) -> Path:
        calls.append(plan_path)
        return write_recorded_run(runs_root / "r")

    app = GrowCockpitApp(
        plan_path=sample_plan("cpu-demo"), runs_root=tmp_path, launcher=fake_launch
    )
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.click("#launch")
        await pilot.pause()
        assert len(calls) == 1 and isinstance(app.screen, DashboardScreen)


async def test_failed_launch_is_reported(tmp_path: Path) -> None:
    def broken(plan_path: Path, runs_root: Path) -> Path:
        raise OSError("disk full")

    app = GrowCockpitApp(plan_path=sample_plan("cpu-demo"), runs_root=tmp_path, launcher=broken)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, PlanScreen)
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert errors == ["launch failed: disk full"]


async def test_invalid_plan_shows_the_error_and_cannot_launch(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\nbogus_key = 1\n[[stages]]\nname = "a"\nlayers = 2\nsteps = 0\n')
    calls: list[Path] = []
    app = GrowCockpitApp(
        plan_path=bad, runs_root=tmp_path, launcher=lambda p, r: calls.append(p) or r
    )
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PlanScreen) and screen.plan is None
        error = str(screen.query_one("#plan-error").render())
        assert error.startswith("cannot launch:") and "bad.toml" in error
        assert screen.query_one("#launch").disabled
        await pilot.press("l")
        await pilot.pause()
        assert calls == [] and isinstance(app.screen, PlanScreen)
        assert any(n.severity == "error" for n in app._notifications)


def test_stage_rows_policies_and_overrides(tmp_path: Path) -> None:
    plan = load_plan(write_plan(tmp_path / "p.toml"))
    rows = stage_rows(plan)
    assert [r[4] for r in rows] == ["all: 0-1", "new: 2-3", "top:3: 3-5", "all: 0-5"]
    assert [r[6] for r in rows] == ["0.0005", "0.0005", "0.0003", "0.0005"]
    assert [r[7] for r in rows] == ["auto", "auto", "manual", "auto"]
    assert [r[8] for r in rows] == ["–"] * 4  # no cost given


async def test_backend_that_dies_at_start_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real launcher, with a stand-in interpreter that fails the way a broken install does."""
    from growcockpit.ui.screens import dashboard

    monkeypatch.setattr(dashboard, "ALIVE_CHECK_S", 0.05)
    fake_python = tmp_path / "fake-python"
    fake_python.write_text("#!/bin/sh\necho 'ImportError: no module named boom'\nexit 3\n")
    fake_python.chmod(0o755)

    def launch(plan_path: Path, runs_root: Path) -> Path:
        return RunClient.launch(plan_path, runs_root, python=str(fake_python))

    app = GrowCockpitApp(
        plan_path=sample_plan("cpu-demo"), runs_root=tmp_path / "runs", launcher=launch
    )
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("l")
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        assert screen.run_dir.parent == (tmp_path / "runs").resolve()
        log = screen.query_one(EventLogPanel)
        for _ in range(100):
            await pilot.pause(0.05)
            if log.shown:
                break
        head = str(screen.query_one(RunHeader).render())
        assert "cpu-demo" in head and "no backend" in head  # plan name from the launched file
        (line,) = log.shown
        assert "backend is not running (exit code 3)" in line
        assert "ImportError: no module named boom" in line


async def test_light_theme_and_unknown_theme() -> None:
    app = GrowCockpitApp(plan_path=sample_plan("cpu-demo"), theme="light")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.theme == "textual-light" and isinstance(app.screen, PlanScreen)
    with pytest.raises(ValueError, match="unknown theme"):
        GrowCockpitApp(theme="neon")
