"""SVG snapshots of the cockpit (pytest-textual-snapshot): home, designer, dashboard
mid-run and after a crash, at 80×24 and 160×48, in the dark and light themes.

Regenerate after a deliberate UI change with
`pytest tests/ui/test_ui_snapshots.py --snapshot-update` and review the SVGs.
Only fixed data goes in: recorded runs with fixed timestamps, a fixed clock, fixed
file times, plan paths relative to a temporary working directory.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from ui_fixtures import (
    T0,
    crashed_events,
    fsdp_memory,
    gpu_system,
    recorded_events,
    set_mtime,
    settle,
    write_events,
    write_plan,
    write_recorded_run,
)

from growcockpit.protocol import RunPaths
from growcockpit.ui import GrowCockpitApp

SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
THEMES = pytest.mark.parametrize("theme", ["dark", "light"])
CLOCK = T0 + 100.0


async def _caught_up(pilot: Pilot[None]) -> None:
    await settle(pilot)
    await pilot.pause(0.1)


async def _idle(pilot: Pilot[None]) -> None:
    """Let the screen's loading workers finish (slow on a loaded CI box), then render."""
    await pilot.pause(0.1)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause(0.3)


def _workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write_plan(tmp_path / "mslt-snapshot.toml")
    samples = tmp_path / "samples"
    samples.mkdir()
    write_plan(samples / "sample.toml").write_text(
        (samples / "sample.toml").read_text().replace("mslt-snapshot", "sample-mslt")
    )
    return samples


@SIZES
@THEMES
def test_home(
    snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int], theme: str
) -> None:  # type: ignore[no-untyped-def]
    samples = _workdir(tmp_path, monkeypatch)
    runs = tmp_path / "runs"
    write_recorded_run(runs / "mslt-demo-20260101-000000")
    write_recorded_run(runs / "mslt-demo-20260101-010000", finished=False, upto_step=30)
    set_mtime(runs / "mslt-demo-20260101-000000", T0)
    set_mtime(runs / "mslt-demo-20260101-010000", T0 + 50)
    app = GrowCockpitApp(
        runs_root=runs, workdir=tmp_path, samples=samples, clock=lambda: CLOCK, theme=theme
    )
    assert snap_compare(app, terminal_size=size, run_before=_idle)


@SIZES
@THEMES
def test_designer(
    snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int], theme: str
) -> None:  # type: ignore[no-untyped-def]
    samples = _workdir(tmp_path, monkeypatch)
    app = GrowCockpitApp(
        plan_path=Path("mslt-snapshot.toml"), samples=samples, theme=theme, workdir=tmp_path
    )
    assert snap_compare(app, terminal_size=size, run_before=_idle)


@SIZES
@THEMES
def test_dashboard_mid_run(snap_compare, tmp_path: Path, size: tuple[int, int], theme: str) -> None:  # type: ignore[no-untyped-def]
    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=60)
    app = GrowCockpitApp(
        run_dir=run_dir, clock=lambda: CLOCK, theme=theme, workdir=tmp_path, samples=tmp_path
    )
    assert snap_compare(app, terminal_size=size, run_before=_caught_up)


@SIZES
@THEMES
def test_dashboard_after_crash(
    snap_compare, tmp_path: Path, size: tuple[int, int], theme: str
) -> None:  # type: ignore[no-untyped-def]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_events(RunPaths(run_dir).events, crashed_events())
    app = GrowCockpitApp(
        run_dir=run_dir, clock=lambda: CLOCK, theme=theme, workdir=tmp_path, samples=tmp_path
    )
    assert snap_compare(app, terminal_size=size, run_before=_caught_up)


async def _timing_tab(pilot: Pilot[None]) -> None:
    await _caught_up(pilot)
    await pilot.press("3")
    await pilot.pause(0.3)
    pilot.app.screen.flush_plot()  # type: ignore[attr-defined]
    await pilot.pause(0.1)


@THEMES
def test_dashboard_timing_tab_80x24(snap_compare, tmp_path: Path, theme: str) -> None:  # type: ignore[no-untyped-def]
    """At 80x24 the tokens/s plot keeps its height under the timing table."""
    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=60)
    app = GrowCockpitApp(
        run_dir=run_dir, clock=lambda: CLOCK, theme=theme, workdir=tmp_path, samples=tmp_path
    )
    assert snap_compare(app, terminal_size=(80, 24), run_before=_timing_tab)


async def _system_tab(pilot: Pilot[None]) -> None:
    await _caught_up(pilot)
    await pilot.press("4")
    await pilot.pause(0.3)


@THEMES
def test_dashboard_system_tab_ranks_80x24(snap_compare, tmp_path: Path, theme: str) -> None:  # type: ignore[no-untyped-def]
    """The system tab names the strategy and world size and shows each rank's memory."""
    events = recorded_events(finished=False, upto_step=60)
    events += [gpu_system(events[-1].t + 0.1), fsdp_memory(events[-1].t + 0.2)]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_events(RunPaths(run_dir).events, events)
    app = GrowCockpitApp(
        run_dir=run_dir, clock=lambda: CLOCK, theme=theme, workdir=tmp_path, samples=tmp_path
    )
    assert snap_compare(app, terminal_size=(80, 24), run_before=_system_tab)
