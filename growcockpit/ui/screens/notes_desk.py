"""The run's note and tags on the dashboard (`N`, `T`), kept in the run directory.

A `NotesDesk` is a part of the dashboard that draws nothing: it owns the notes shown
(one writer), reads and writes the run directory's `notes.json`
(growcockpit.protocol.run_notes) in thread workers, and re-reads it every few seconds
so that `growcockpit note` / `tag` from a shell show up too. Each change is posted up
(`Changed`): the screen shows it in the run header.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from textual import work
from textual.message import Message
from textual.widget import Widget
from textual.worker import get_current_worker

from growcockpit.protocol.run_notes import (
    TAG_RULE,
    RunNotes,
    keep_corrupt_aside,
    note_problem,
    parse_tags,
    read_notes,
    tags_problem,
    write_notes,
)
from growcockpit.protocol.safe_fs import RunDirError
from growcockpit.ui.screens.prompt import PromptScreen

NOTES_POLL_S = 3.0


class NotesDesk(Widget):
    """The note and tags of the run at `run_dir`."""

    DEFAULT_CSS = "NotesDesk { display: none; }"

    class Changed(Message):
        """The run's notes now (read, or saved here)."""

        def __init__(self, notes: RunNotes) -> None:
            super().__init__()
            self.notes = notes

    def __init__(self, run_dir: Path) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.notes = RunNotes()

    def on_mount(self) -> None:
        self._watch()

    def ask_note(self) -> None:
        """`N`: a prompt for the note; saved on Enter."""

        def done(value: str | None) -> None:
            if value is not None:
                self._save(replace(self.notes, note=value))

        body = "One line, kept in the run directory (notes.json); empty clears it."
        prompt = PromptScreen("Note for this run", body, self.notes.note, note_problem, "Save")
        self.app.push_screen(prompt, done)

    def ask_tags(self) -> None:
        """`T`: a prompt for the tags; saved on Enter."""

        def done(value: str | None) -> None:
            if value is not None:
                self._save(replace(self.notes, tags=parse_tags(value)))

        body = f"Comma-separated, replacing the run's tags; {TAG_RULE}. Empty clears them."
        value = ", ".join(self.notes.tags)
        self.app.push_screen(PromptScreen("Tags", body, value, tags_problem, "Save"), done)

    @work(thread=True, group="notes", exit_on_error=False)
    def _save(self, notes: RunNotes) -> None:
        try:
            keep_corrupt_aside(self.run_dir)
            write_notes(self.run_dir, notes)
        except (OSError, RunDirError, ValueError) as exc:
            text = str(exc).splitlines()[0] if str(exc) else repr(exc)
            self.app.call_from_thread(self.notify, text, title="Not saved", severity="error")
            return
        self.app.call_from_thread(self._show, notes)
        self.app.call_from_thread(self.notify, "saved in notes.json", timeout=2)

    @work(thread=True, exclusive=True, group="notes-watch", exit_on_error=False)
    def _watch(self) -> None:
        """Read notes.json now and every NOTES_POLL_S (a shell may set them meanwhile)."""
        worker = get_current_worker()
        problem = ""
        while not worker.is_cancelled:
            try:
                notes, now = read_notes(self.run_dir), ""
            except RunDirError as exc:
                notes, now = RunNotes(), str(exc).splitlines()[0]
            if now and now != problem:
                self.app.call_from_thread(self.notify, now, title="notes.json", severity="warning")
            problem = now
            if notes != self.notes:
                self.app.call_from_thread(self._show, notes)
            until = time.monotonic() + NOTES_POLL_S
            while not worker.is_cancelled and time.monotonic() < until:
                time.sleep(0.1)

    def _show(self, notes: RunNotes) -> None:
        self.notes = notes
        self.post_message(self.Changed(notes))
