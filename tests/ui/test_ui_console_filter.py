"""The Console tab (6) over a real run directory whose backend.log grows, and the `/`
filter over the layer tables, the event logs and the console."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ui_fixtures import T0, screen_text, settle, write_recorded_run

from growcockpit.protocol.rundir import RunPaths
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import DashboardScreen
from growcockpit.ui.widgets.console import ConsolePanel
from growcockpit.ui.widgets.event_log import EventLogPanel
from growcockpit.ui.widgets.layer_table import LayerTable

SIZE = (160, 48)


async def wait_for(pilot: Any, ok: Any, what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < deadline, f"never: {what}"
        await pilot.pause(0.05)


def _append(path: Path, text: str) -> None:
    with path.open("a") as fh:
        fh.write(text)


async def test_console_follows_a_growing_backend_log(tmp_path: Path) -> None:
    run = write_recorded_run(tmp_path / "mslt-demo", finished=False, upto_step=30)
    log = RunPaths(run).log
    log.write_text("growcockpit backend starting\nloading corpus\n")
    app = GrowCockpitApp(run_dir=run, clock=lambda: T0 + 100)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        console = app.screen.query_one(ConsolePanel)
        await pilot.press("6")
        await wait_for(pilot, lambda: console.shown[-1:] == ["loading corpus"], "the log")
        assert "loading corpus" in screen_text(app)
        _append(log, "UserWarning: \x1b[33mslow\x1b[0m tokenizer\n 10%|#\r100%|##########|\n")
        await wait_for(pilot, lambda: console.shown[-1:] == ["100%|##########|"], "appends")
        assert "UserWarning: slow tokenizer" in console.shown
        log.write_text("resumed from step-20\n")  # truncated: a resume rewrote the log
        await wait_for(pilot, lambda: console.shown[-1:] == ["resumed from step-20"], "reread")
        assert any("was truncated" in line for line in console.shown)
        before = len(console.kept)
        log.unlink()
        os.mkfifo(log)  # planted: refused with one line, never blocks the worker
        await wait_for(pilot, lambda: any("FIFO" in ln for ln in console.shown), "the refusal")
        assert len(console.kept) == before + 1
        await pilot.press("5", "6")  # switching tabs keeps the lines
        assert console.shown[-1].startswith(str(log)) and isinstance(app.screen, DashboardScreen)


async def test_filter_over_layers_events_and_console(tmp_path: Path) -> None:
    run = write_recorded_run(tmp_path / "mslt-demo")
    RunPaths(run).log.write_text("step 10 ok\nRuntimeError: boom\nstep 20 ok\n")
    app = GrowCockpitApp(run_dir=run, clock=lambda: T0 + 100)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        table = screen.query_one("#layer-table", LayerTable)
        events = screen.query_one("#event-log-full", EventLogPanel)
        console = screen.query_one(ConsolePanel)
        await wait_for(pilot, lambda: len(console.kept) == 3, "the console lines")
        assert sorted(table.roles()) == [0, 1, 2, 3]
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press("(")
        await pilot.pause()
        assert "not a regular expression" in screen_text(app)  # one line, no crash
        await pilot.press("enter")  # refused while invalid
        await pilot.pause()
        assert not screen.view_filter.active
        await pilot.press("backspace", *"^(1|3)$|boom|grow", "enter")
        await wait_for(pilot, lambda: sorted(table.roles()) == [1, 3], "the layer rows")
        assert console.shown == ["RuntimeError: boom"]
        assert events.shown and all("grow" in line.lower() for line in events.shown)
        assert len(events.shown) < len(events.kept)
        assert "of 4" in str(table.border_subtitle)
        await pilot.press("escape")  # clears the filter first, stays on the dashboard
        await wait_for(pilot, lambda: sorted(table.roles()) == [0, 1, 2, 3], "all rows back")
        assert app.screen is screen and len(console.shown) == 3
        assert len(events.shown) == len(events.kept) and not table.border_subtitle
        await pilot.press("slash", *"frozen", "escape")  # Esc in the prompt clears too
        await pilot.pause()
        assert not screen.view_filter.active and app.screen is screen


async def test_console_of_a_run_without_backend_log_says_why(tmp_path: Path) -> None:
    """A foreground `growcockpit train` prints to its terminal: the tab said nothing at all."""
    from growcockpit.session.console_tail import ABSENT_NOTE

    run = write_recorded_run(tmp_path / "mslt-demo", finished=False, upto_step=30)
    app = GrowCockpitApp(run_dir=run, clock=lambda: T0 + 100)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        console = app.screen.query_one(ConsolePanel)
        await pilot.press("6")
        await wait_for(pilot, lambda: console.shown == [ABSENT_NOTE], "the hint")
