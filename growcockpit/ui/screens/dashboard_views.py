"""The dashboard's view keys that change no training: the `/` filter, the run's notes
and a pinned baseline.

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
from abc import abstractmethod
from dataclasses import replace
from pathlib import Path

from textual import work
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
from growcockpit.session.catalog import RunEntry
from growcockpit.session.pinned_baseline import (
    PinnedBaseline,
    candidates,
    events_mtime_ns,
    load_pinned,
    remember_pin,
    remembered_pin,
)
from growcockpit.session.plot_range import (
    move_cursor,
    parse_step_range,
    range_problem,
    range_text,
)
from growcockpit.session.view_filter import ViewFilter, filter_problem
from growcockpit.ui.screens.dashboard_commands import DashboardCommands
from growcockpit.ui.screens.pick_run import Picked, PickRunScreen
from growcockpit.ui.screens.prompt import PromptScreen
from growcockpit.ui.widgets.filtered_log import FilteredLog
from growcockpit.ui.widgets.heatmap import LayerHeatmap
from growcockpit.ui.widgets.layer_table import LayerTable
from growcockpit.ui.widgets.loss_plot import LossPlot, axis_plots
from growcockpit.ui.widgets.run_header import RunHeader

NOTES_POLL_S = 3.0
PIN_POLL_S = 2.0  # a pinned baseline still training is re-read when its log changed
FILTER_BODY = (
    "A regular expression over the layer tables and the heatmap (layer index, 'layer N', "
    "state, health), the event logs, the console and the plotted series (train/loss, "
    "val/loss, tokens/s, grad norm); case-insensitive unless it has a capital. "
    "Empty or Esc shows everything."
)

RANGE_BODY = (
    "Two steps, as 30-40: every plot shows only those, on its x axis; , and . then move "
    "a cursor whose values each plot gives in its lower border. Empty: the whole run."
)


class DashboardViews(DashboardCommands):
    run_dir: Path
    view_filter: ViewFilter = ViewFilter()
    notes: RunNotes = RunNotes()
    pinned_path: Path | None = None

    @abstractmethod
    def flush_plot(self) -> None:
        """The screen's: redraws the plots that are on screen."""

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
        for plot in axis_plots(self):
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

    # ---- zoom by range and the cursor ------------------------------------------------
    def action_step_range(self) -> None:
        """`z`: show steps A-B on every plot (empty: the whole run again)."""

        def done(value: str | None) -> None:
            if value is not None:
                self.set_step_range(parse_step_range(value))

        current = range_text(self.query_one(LossPlot).steps)
        prompt = PromptScreen("Show steps", RANGE_BODY, current, range_problem, "Show")
        self.app.push_screen(prompt, done)

    def set_step_range(self, steps: tuple[int, int] | None) -> None:
        for plot in axis_plots(self):
            plot.steps, plot.zoom, plot.cursor = steps, 0, None
        self.notify(f"steps {range_text(steps)}" if steps else "the whole run", timeout=2)
        self.flush_plot()

    def action_cursor(self, by: int) -> None:
        """`,` / `.`: the cursor a step (1/40 of the range) left / right, on every plot."""
        loss = self.query_one(LossPlot)
        with self.state_lock:
            xs = self.state.train_loss.xs
            whole = (int(xs[0]), int(xs[-1])) if xs else (0, self.state.step)
        steps = loss.steps or whole
        cursor = move_cursor(loss.cursor, steps, by)
        for plot in axis_plots(self):
            plot.cursor = cursor
        self.flush_plot()

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
            keep_corrupt_aside(self.run_dir)
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

    # ---- a pinned baseline --------------------------------------------------------
    def action_pin_baseline(self) -> None:
        self._list_baselines()

    @work(thread=True, exclusive=True, group="pin-list", exit_on_error=False)
    def _list_baselines(self) -> None:
        runs = candidates(self.run_dir.parent, self.run_dir)
        self.app.call_from_thread(self._pick_baseline, runs)

    def _pick_baseline(self, runs: list[RunEntry]) -> None:
        def done(picked: Picked) -> None:
            if picked == "unpin":
                self.workers.cancel_group(self, "pin-watch")
                self.show_pin(None)
                self._forget_pin()
            elif picked is not None:
                self.watch_pin(picked, remember=True)

        self.app.push_screen(PickRunScreen(runs, self.pinned_path), done)

    @work(thread=True, group="pin", exit_on_error=False)
    def _forget_pin(self) -> None:
        remember_pin(self.run_dir, None)
        self.app.call_from_thread(self.notify, "baseline unpinned", timeout=2)

    @work(thread=True, exclusive=True, group="pin-watch", exit_on_error=False)
    def watch_pin(self, path: Path | None = None, remember: bool = False) -> None:
        """Load the baseline at `path` (None: the one remembered for this run, if any) and
        re-read it while it trains; a new pin cancels this worker (exclusive group)."""
        remembered = path is None
        path = remembered_pin(self.run_dir) if path is None else path
        if path is None:
            return
        worker = get_current_worker()
        seen = -1
        while not worker.is_cancelled:
            mtime = events_mtime_ns(path)
            if mtime != seen:
                try:
                    pin = load_pinned(path, self.run_dir.parent, (self.run_dir,))
                except ValueError as exc:
                    if seen == -1:  # never shown: say why; a later bad read keeps the last
                        if remembered and not path.exists():
                            remember_pin(self.run_dir, None)  # its run is gone: forget it
                        self.app.call_from_thread(
                            self.notify, str(exc), title="Baseline", severity="warning"
                        )
                        return
                else:
                    if worker.is_cancelled:  # unpinned or re-pinned while this one read
                        return
                    self.app.call_from_thread(self.show_pin, pin)
                    if seen == -1 and remember:
                        saved = remember_pin(self.run_dir, path)
                        kept = "" if saved else " (for this session: settings not writable)"
                        self.app.call_from_thread(
                            self.notify, f"baseline pinned: {pin.name}{kept}", timeout=3
                        )
                    if pin.status != "running":
                        return  # its log is complete
                seen = mtime
            until = time.monotonic() + PIN_POLL_S
            while not worker.is_cancelled and time.monotonic() < until:
                time.sleep(0.1)

    def show_pin(self, pin: PinnedBaseline | None) -> None:
        self.pinned_path = pin.path if pin is not None else None
        self.query_one(LossPlot).pin(pin)
        self.flush_plot()
