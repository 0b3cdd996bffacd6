"""Run notes and tags in the cockpit: Home's notes column, the dashboard's N and T keys
and header, a shell's `growcockpit tag` showing up in an open dashboard."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ui_fixtures import T0, screen_text, write_recorded_run

from growcockpit.protocol.run_notes import RunNotes, write_notes
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import HomeScreen

SIZE = (160, 48)


async def wait_for(pilot: Any, ok: Any, what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < deadline, f"never: {what}"
        await pilot.pause(0.05)


async def test_home_shows_notes_and_follows_changes(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    tagged = write_recorded_run(runs / "mslt-tagged")
    write_recorded_run(runs / "mslt-plain")
    write_notes(tagged, RunNotes("warmup too short", ("best",)))
    (runs / "mslt-plain" / "notes.json").write_text("not json")  # a bad file: no notes, no crash
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path, clock=lambda: T0 + 3600)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        text = screen_text(app)
        assert "notes" in text and "#best warmup too short" in text
        write_notes(runs / "mslt-plain", RunNotes("", ("lr-sweep", "seed1")))
        await wait_for(pilot, lambda: "#lr-sweep #seed1" in screen_text(app), "the new tags")


def test_header_shows_notes_in_the_room_left() -> None:
    from ui_fixtures import recorded_events

    from growcockpit.session.run_state import RunState
    from growcockpit.ui.widgets.run_header import header_text

    state = RunState()
    for ev in recorded_events():
        state.apply(ev)
    notes = RunNotes("a note long enough to be cut at a narrow width", ("best",))
    wide = header_text(state, T0, 160, "", notes).plain.splitlines()
    assert wide[2].endswith("#best a note long enough to be cut at a narrow width")
    narrow = header_text(state, T0, 80, "controller", notes).plain.splitlines()
    assert all(len(line) <= 80 for line in narrow) and narrow[2].endswith("…")
    assert "#best" in narrow[2]
    assert header_text(state, T0, 160, "", RunNotes()).plain == header_text(state, T0, 160).plain
