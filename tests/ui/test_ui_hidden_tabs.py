"""What arrives while a tab is hidden is drawn at the tab's width when it
shows (the Events tab wrapped at 20 columns after events arrived while hidden)."""

from __future__ import annotations

from pathlib import Path

from ui_fixtures import recorded_events, settle, wait_for, write_events

from growcockpit.protocol import RunPaths
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.widgets import EventLogPanel

SIZE = (160, 48)


async def test_events_that_arrive_while_the_events_tab_is_hidden_keep_its_width(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    every = recorded_events(finished=True)
    first = recorded_events(finished=False, upto_step=20)
    write_events(RunPaths(run_dir).events, first)
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        log = screen.query_one("#event-log-full", EventLogPanel)
        await pilot.press("5")  # the Events tab, once: it knows its width
        await pilot.pause(0.3)
        await pilot.press("1")  # hidden again
        await pilot.pause(0.3)
        before = len(log.shown)
        write_events(RunPaths(run_dir).events, every[len(first) :])  # grow, stage 2, end
        await wait_for(pilot, lambda: screen.session.state.finished)
        await settle(pilot)
        assert len(log.shown) > before
        for _ in range(2):  # and it stays so across tab switches
            await pilot.press("5")
            await pilot.pause(0.3)
            widths = [strip.cell_length for strip in log.lines]
            assert len(log.lines) == len(log.shown), "an event line wrapped"
            assert max(widths) > 60
            await pilot.press("1")
            await pilot.pause(0.3)
