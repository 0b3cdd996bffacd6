"""The dashboard's view keys that change no training: the `/` filter and the run's notes.

A base of `DashboardScreen` (dashboard.py) above `DashboardCommands`. The
filter narrows the layer tables, the event logs, the console and the plots' series
(the heatmap's layers too) to what one regular expression matches
(growcockpit.session.view_filter); Escape clears it. The note and tags are the run
directory's `notes.json` (growcockpit.protocol.run_notes), read and written in
thread workers, and re-read every few seconds so that `growcockpit note` / `tag`
from a shell show up here too.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from textual import work
from textual.worker import get_current_worker

from growcockpit.protocol.run_notes import (
    TAG_RULE,
    RunNotes,
    note_problem,
    parse_tags,
    read_notes,
    tags_problem,
    write_notes,
)
from growcockpit.protocol.safe_fs import RunDirError
from growcockpit.session.view_filter import ViewFilter, filter_problem
from growcockpit.ui.screens.dashboard_commands import DashboardCommands
from growcockpit.ui.screens.prompt import PromptScreen
from growcockpit.ui.widgets.filtered_log import FilteredLog
from growcockpit.ui.widgets.heatmap import LayerHeatmap
from growcockpit.ui.widgets.layer_table import LayerTable
from growcockpit.ui.widgets.loss_plot import AxisPlot
from growcockpit.ui.widgets.run_header import RunHeader

NOTES_POLL_S = 3.0
FILTER_BODY = (
    "A regular expression over the layer tables and the heatmap (layer index, 'layer N', "
    "state, health), the event logs, the console and the plotted series (train/loss, "
    "val/loss, tokens/s, grad norm); case-insensitive unless it has a capital. "
    "Empty or Esc shows everything."
)


class DashboardViews(DashboardCommands):
    run_dir: Path
    view_filter: ViewFilter = ViewFilter()
    notes: RunNotes = RunNotes()

    def flush_plot(self) -> None:
        raise NotImplementedError  # the screen's: redraws the plots that are on screen

    # ---- the filter ---------------------------------------------------------------
    def action_filter(self) -> None:
        def done(value: str | None) -> None:
            self.set_view_filter(ViewFilter.parse(value or ""))  # Esc (None) clears

        prompt = PromptScreen(
            "Filter layers, logs and plots",
            FILTER_BODY,
            self.view_filter.text,
            filter_problem,
            "Filter",
        )
        self.app.push_screen(prompt, done)

    def set_view_filter(self, view_filter: ViewFilter) -> None:
        self.view_filter = view_filter
        for table in self.query(LayerTable):
            table.view_filter = view_filter
        for log in self.query(FilteredLog):
            log.set_filter(view_filter)
        for plot in self.query(AxisPlot):
            plot.set_filter(view_filter)
        for heatmap in self.query(LayerHeatmap):
            heatmap.set_filter(view_filter)
        self.flush_text()
        self.flush_plot()
        shown = f"filter /{view_filter.text}/ (Esc clears)" if view_filter.active else "no filter"
        self.notify(shown, timeout=2)

    def clear_filter(self) -> bool:
        """Escape on the dashboard: clear an active filter first (True), else nothing."""
        if not self.view_filter.active:
            return False
        self.set_view_filter(ViewFilter())
        return True

    # ---- notes and tags -----------------------------------------------------------
    def action_note(self) -> None:
        def done(value: str | None) -> None:
            if value is not None:
                self._save_notes(replace(self.notes, note=value))

        body = "One line, kept in the run directory (notes.json); empty clears it."
        prompt = PromptScreen("Note for this run", body, self.notes.note, note_problem, "Save")
        self.app.push_screen(prompt, done)

    def action_tags(self) -> None:
        def done(value: str | None) -> None:
            if value is not None:
                self._save_notes(replace(self.notes, tags=parse_tags(value)))

        body = f"Comma-separated, replacing the run's tags; {TAG_RULE}. Empty clears them."
        value = ", ".join(self.notes.tags)
        self.app.push_screen(PromptScreen("Tags", body, value, tags_problem, "Save"), done)

    @work(thread=True, group="notes", exit_on_error=False)
    def _save_notes(self, notes: RunNotes) -> None:
        try:
            write_notes(self.run_dir, notes)
        except (OSError, RunDirError, ValueError) as exc:
            text = str(exc).splitlines()[0] if str(exc) else repr(exc)
            self.app.call_from_thread(self.notify, text, title="Not saved", severity="error")
            return
        self.app.call_from_thread(self.show_notes, notes)
        self.app.call_from_thread(self.notify, "saved in notes.json", timeout=2)

    @work(thread=True, exclusive=True, group="notes-watch", exit_on_error=False)
    def watch_notes(self) -> None:
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
                self.app.call_from_thread(self.show_notes, notes)
            until = time.monotonic() + NOTES_POLL_S
            while not worker.is_cancelled and time.monotonic() < until:
                time.sleep(0.1)

    def show_notes(self, notes: RunNotes) -> None:
        self.notes = notes
        self.query_one(RunHeader).notes = notes
        self.flush_text()
