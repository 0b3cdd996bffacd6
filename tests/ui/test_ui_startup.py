"""A starting run says what it is doing: the dashboard's header and Home's runs list
show the start-up phase under way and for how long, live, until the first step."""

from __future__ import annotations

import os
from pathlib import Path

from ui_fixtures import T0, screen_text, settle, starting_events, wait_for, write_events

from growcockpit.protocol import EventLog, RunPaths, RunStatus, write_status
from growcockpit.protocol.rundir import process_start_time
from growcockpit.session.catalog import list_runs
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import HomeScreen
from growcockpit.ui.widgets import EventLogPanel, RunHeader

SIZE = (160, 48)
NOW = T0 + 0.3 + 4.1  # the token cache began at T0 + 0.3 (tokenizer 0.3 s)


def starting_run(run_dir: Path) -> Path:
    """A live run (this process stands in for its backend) building its token cache."""
    run_dir.mkdir(parents=True)
    write_events(RunPaths(run_dir).events, starting_events(until="token_cache"))
    write_status(
        RunPaths(run_dir).status,
        RunStatus(
            run_id=run_dir.name,
            plan_name="mslt-demo",
            state="starting",
            num_stages=2,
            total_steps=80,
            pid=os.getpid(),
            pid_started=process_start_time(os.getpid()) or 0.0,
            phase="token_cache",
            phase_since=T0 + 0.3,
        ),
    )
    return run_dir


def header(app: GrowCockpitApp) -> str:
    return str(app.screen.query_one(RunHeader).render())


async def test_the_dashboard_shows_the_phase_under_way_then_goes_live(tmp_path: Path) -> None:
    run_dir = starting_run(tmp_path / "run")
    now = [NOW]
    app = GrowCockpitApp(run_dir=run_dir, clock=lambda: now[0])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "● starting: building the token cache 4.1 s" in header(app)
        now[0] += 2.0  # the clock ticks: so does the phase's time
        await wait_for(pilot, lambda: "building the token cache 6.1 s" in header(app))
        rest = starting_events()[len(starting_events(until="token_cache")) :]
        with EventLog(RunPaths(run_dir).events) as log:
            for event in rest:
                log.append(event)
        await wait_for(pilot, lambda: "● live" in header(app))
        assert "starting" not in header(app) and "step 1/80" in header(app)
        log_lines = app.screen.query_one(EventLogPanel).shown
        breakdown = next(line for line in log_lines if "after launch" in line)
        assert "first step 10.9 s after launch: imports 5.2 s · device 0.0 s" in breakdown
        assert "token cache 4.1 s" in breakdown and "first step 0.6 s" in breakdown


async def test_home_lists_a_starting_run_with_its_phase(tmp_path: Path) -> None:
    starting_run(tmp_path / "runs" / "mslt-starting")
    (run,) = list_runs(tmp_path / "runs")
    assert (
        run.status == "live" and run.stage_text(NOW) == "starting: building the token cache 4.1 s"
    )
    app = GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path, clock=lambda: NOW)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert "starting: building the token cache 4.1 s" in screen_text(app)


def test_an_old_log_without_phases_reads_as_before(tmp_path: Path) -> None:
    """Runs from backends that sent no start-up events: no phase, the stage as before."""
    from ui_fixtures import write_recorded_run

    write_recorded_run(tmp_path / "runs" / "old")
    (run,) = list_runs(tmp_path / "runs")
    assert run.phase == "" and run.stage_text(NOW) == run.stage


def test_home_says_importing_before_the_backend_has_a_log(tmp_path: Path) -> None:
    """`guard_startup` runs before torch is imported: its status.json names the imports."""
    import signal

    from growcockpit.backend.startup import STOP_SIGNALS, guard_startup

    saved = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    try:
        guard_startup(tmp_path / "runs" / "fresh", "mslt-demo", 2, 80)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    (run,) = list_runs(tmp_path / "runs")
    assert run.status == "live" and run.phase == "imports"
    assert (
        run.stage_text(run.phase_since + 2.5) == "starting: importing torch and transformers 2.5 s"
    )
