"""The dashboard's N (note) and T (tags) keys: saved in notes.json, shown in the header,
a bad tag one line in the prompt, a shell's change re-read."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ui_fixtures import T0, screen_text, write_recorded_run

from growcockpit.protocol.run_notes import RunNotes, read_notes, write_notes
from growcockpit.ui import GrowCockpitApp

SIZE = (160, 48)


async def wait_for(pilot: Any, ok: Any, what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < deadline, f"never: {what}"
        await pilot.pause(0.05)


async def test_dashboard_note_and_tags_keys(tmp_path: Path) -> None:
    run = write_recorded_run(tmp_path / "runs" / "mslt-demo")
    app = GrowCockpitApp(run_dir=run, runs_root=tmp_path / "runs", clock=lambda: T0 + 100)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("N")
        await pilot.pause()
        await pilot.press(*"baseline for lr 2e-3", "enter")
        await wait_for(pilot, lambda: read_notes(run).note == "baseline for lr 2e-3", "saved")
        await pilot.press("T")
        await pilot.pause()
        await pilot.press(*"best,bad/tag")
        await pilot.pause()
        assert 'tag "bad/tag"' in screen_text(app)  # one line in the prompt, never a crash
        await pilot.press("enter")  # refused while the tags are bad
        await pilot.pause()
        assert read_notes(run).tags == ()
        for _ in "/tag":
            await pilot.press("backspace")
        await pilot.press("enter")
        await wait_for(pilot, lambda: read_notes(run).tags == ("best", "bad"), "tags saved")
        header = "#best #bad baseline for lr 2e-3"
        await wait_for(pilot, lambda: header in screen_text(app), "the header shows them")
        write_notes(run, RunNotes("from a shell", ("cli",)))  # `growcockpit tag` meanwhile
        await wait_for(pilot, lambda: "#cli from a shell" in screen_text(app), "re-read")
