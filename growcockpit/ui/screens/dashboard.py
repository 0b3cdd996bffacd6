"""The live view of one run: header, tabs (overview, layers, timing, system, events,
console, samples), commands.

The screen is a view of a `RunSession` (plain Python): a thread worker runs the
session's tail loop, which reads the run directory and folds events into the session's
`RunState`. Timers flush text at 4 Hz and plots at 2 Hz, holding the session's lock
only to read the state (no disk I/O in a timer); a plot (or the heatmap) redraws only
when its data, size or theme changed and only while it is on screen.

Composed, not inherited: the keys call parts that each own one job and post what
changed up here. `CommandDesk` (run_commands.py) sends commands, from the cockpit
holding the run's controller role only; `NotesDesk` keeps the run's note and tags,
`PinDesk` a pinned baseline; the view keys that change no training are functions over
the plots (dashboard_plots.py); the view is remembered per run (dashboard_memory.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, TabbedContent, TabPane
from textual.worker import get_current_worker

from growcockpit.session.console_tail import ConsoleTail
from growcockpit.session.fold.layers import TIMING_WINDOW
from growcockpit.session.plot_range import parse_step_range, range_problem
from growcockpit.session.run_session import RunSession
from growcockpit.session.view_filter import ViewFilter, filter_problem
from growcockpit.session.view_memory import RunViewMemory
from growcockpit.ui.screens import dashboard_plots as plots
from growcockpit.ui.screens.dashboard_memory import apply_view, current_view
from growcockpit.ui.screens.help_texts import DASHBOARD_HELP
from growcockpit.ui.screens.notes_desk import NotesDesk
from growcockpit.ui.screens.pin_desk import PinDesk
from growcockpit.ui.screens.prompt import HelpScreen, PromptScreen, keys_of
from growcockpit.ui.screens.run_commands import CommandDesk
from growcockpit.ui.widgets import (
    EventLogPanel,
    LayerHeatmap,
    LayerTable,
    LossPlot,
    RunHeader,
    SystemPanel,
    ThroughputPlot,
    TimingPanel,
)
from growcockpit.ui.widgets.console import ConsolePanel
from growcockpit.ui.widgets.loss_plot import PinStanding
from growcockpit.ui.widgets.samples_panel import SamplesPanel
from growcockpit.ui.widgets.scalar_plot import ScalarHint, ScalarPlot

TEXT_FLUSH_S = 0.25  # ≤ 4 Hz
PLOT_FLUSH_S = 0.5  # ≤ 2 Hz
TABS = ("overview", "layers", "timing", "system", "events", "console", "samples")
LAYERS_TITLE = f"layers · ms: median of the last n ≤ {TIMING_WINDOW} samples"


class DashboardScreen(Screen[None]):
    BINDINGS = [
        Binding("p", "pause_resume", "Pause"),
        Binding("g", "advance", "Advance"),
        Binding("c", "checkpoint", "Ckpt"),
        Binding("s", "stop", "Stop"),
        Binding("e", "edit_stages", "Edit"),
        Binding("l", "scale_lr", "LR"),
        Binding("b", "rollback", "Rewind"),
        Binding("r", "toggle_raw", "Raw/smoothed", show=False),
        Binding("q", "leave", "Leave"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("escape", "home", "Home", show=False),
        Binding("x", "cycle_axis", "X axis"),
        Binding("left_square_bracket", "zoom(1)", "Zoom in", show=False, key_display="["),
        Binding("right_square_bracket", "zoom(-1)", "Zoom out", show=False, key_display="]"),
        Binding("0", "zoom(0)", "Zoom reset", show=False),
        Binding("z", "step_range", "Zoom to steps A-B (as 30-40; empty: all)", show=False),
        Binding(
            "comma",
            "cursor(-1)",
            "Cursor left (its values in each plot's border)",
            show=False,
            key_display=",",
        ),
        Binding(
            "full_stop",
            "cursor(1)",
            "Cursor right (its values in each plot's border)",
            show=False,
            key_display=".",
        ),
        Binding("less_than_sign", "smoothing(-1)", "Less smoothing", show=False, key_display="<"),
        Binding("greater_than_sign", "smoothing(1)", "More smoothing", show=False, key_display=">"),
        Binding("1", "tab('overview')", "Overview", show=False),
        Binding("2", "tab('layers')", "Layers", show=False),
        Binding("3", "tab('timing')", "Timing", show=False),
        Binding("4", "tab('system')", "System", show=False),
        Binding("5", "tab('events')", "Events", show=False),
        Binding("6", "tab('console')", "Console", show=False),
        Binding("7", "tab('samples')", "Samples", show=False),
        Binding(
            "v",
            "cycle_scalar",
            "Plot under the loss: LR (warm-up ends, WSD decay), grad norm, update ratio, step ms, tokens/s, none",
            show=False,
        ),
        Binding("slash", "filter", "Filter", show=False, key_display="/"),
        Binding("N", "note", "Note", show=False),
        Binding("T", "tags", "Tags", show=False),
        Binding("B", "pin_baseline", "Baseline", show=False),
    ]

    def __init__(
        self,
        run_dir: Path,
        *,
        clock: Callable[[], float] = time.time,
        command_timeout: float = 60.0,
        plan_path: Path | None = None,
        back: bool = False,  # opened from Home: `q` goes back there
    ) -> None:
        super().__init__()
        self.run_dir, self.back = Path(run_dir), back
        self.plan_path = Path(plan_path) if plan_path is not None else None
        self.session = RunSession(self.run_dir, plan_path=self.plan_path)
        self.clock = clock
        self.command_timeout = command_timeout
        self.view_memory = RunViewMemory(self.run_dir)
        self.view_filter = ViewFilter()  # `/`: this screen's alone, handed to the widgets

    def compose(self) -> ComposeResult:
        yield RunHeader(id="run-header")
        with TabbedContent(id="dash-tabs", initial="overview"):
            with TabPane("1 Overview", id="overview"):
                with Horizontal(id="ov-top"):
                    with Vertical(id="ov-plots"):
                        yield LossPlot(id="loss-plot")
                        yield PinStanding("", id="pin-standing")
                        yield ScalarPlot(id="scalar-plot")
                        yield ScalarHint("", id="scalar-hint")
                    yield LayerTable(id="layer-table")
                with Horizontal(id="ov-bottom"):
                    yield EventLogPanel(id="event-log")
                    yield SystemPanel(compact=True, id="ov-system")
            with TabPane("2 Layers", id="layers"), Horizontal(id="layers-body"):
                yield LayerTable(id="layer-table-full")
                yield LayerHeatmap(id="heatmap")
            with TabPane("3 Timing", id="timing"), Vertical(id="timing-body"):
                yield TimingPanel(id="timing-panel")
                yield ThroughputPlot(id="throughput")
            with TabPane("4 System", id="system"):
                yield SystemPanel(id="system-panel")
            with TabPane("5 Events", id="events"):
                yield EventLogPanel(id="event-log-full")
            with TabPane("6 Console", id="console"):
                yield ConsolePanel(ConsoleTail(self.session.client.paths.log), id="console-log")
            with TabPane("7 Samples", id="samples"):
                yield SamplesPanel(id="samples-panel")
        yield Footer(compact=True)
        # the parts that draw nothing: they own the commands, the notes and the pin
        yield CommandDesk(self.session, plan_path=self.plan_path, timeout=self.command_timeout)
        yield NotesDesk(self.run_dir)
        yield PinDesk(self.run_dir)

    def on_mount(self) -> None:
        for table in self.query(LayerTable):
            table.border_title = LAYERS_TITLE
        self.query_one("#heatmap").border_title = "grad norm: layers × time, by stage"
        self.query_one("#event-log").border_title = "events"
        self.query_one("#event-log-full").border_title = "events"
        self.query_one("#ov-system").border_title = "system"
        self.query_one("#system-panel").border_title = "system"
        self.query_one("#timing-panel").border_title = "time per step"
        self.query_one("#samples-panel").border_title = "samples: what the model writes"
        self.restore_view()
        self.call_after_refresh(self.fit_scalar)
        self.session.claim_control()
        self._tail()
        self.set_interval(TEXT_FLUSH_S, self.flush_text)
        self.set_interval(PLOT_FLUSH_S, self.flush_plot)

    def on_unmount(self) -> None:
        self.session.release()

    @work(thread=True, exclusive=True, group="tail", exit_on_error=False)
    def _tail(self) -> None:
        worker = get_current_worker()
        self.session.run(lambda: worker.is_cancelled)

    # ---- flushing (timers on the event loop) ---------------------------------
    def _on_screen(self, widget: Widget) -> bool:
        return widget.region.area > 0

    def flush_text(self) -> None:
        with self.session.lock:
            state = self.session.state
            role = "" if state.finished else self.session.role
            self.query_one(RunHeader).show_state(state, self.clock(), role)
            for table in self.query(LayerTable):
                table.show_state(state)
            for log in self.query(EventLogPanel):
                log.show_state(state)
            for panel in self.query(SystemPanel):
                if self._on_screen(panel):
                    panel.show_state(state)
            timing = self.query_one(TimingPanel)
            if self._on_screen(timing):
                timing.show_state(state)
            samples = self.query_one(SamplesPanel)
            if self._on_screen(samples):
                samples.show_state(state)

    def flush_plot(self) -> None:
        with self.session.lock:
            for widget in (
                self.query_one(LossPlot),
                self.query_one(ScalarPlot),
                self.query_one(ThroughputPlot),
                self.query_one(LayerHeatmap),
            ):
                if self._on_screen(widget):
                    widget.show_state(self.session.state)
        self.query_one(PinStanding).show(self.query_one(LossPlot).standing_below)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.call_after_refresh(self._flush_all)
        self.remember_view()
        if event.pane.id == "samples":  # its ←/→ step through the evaluations
            self.query_one(SamplesPanel).focus()

    def _flush_all(self) -> None:
        self.flush_text()
        self.flush_plot()

    # ---- what the parts post up ---------------------------------------------
    def on_command_desk_answered(self, _message: CommandDesk.Answered) -> None:
        self.flush_text()

    def on_notes_desk_changed(self, message: NotesDesk.Changed) -> None:
        self.query_one(RunHeader).notes = message.notes
        self.flush_text()

    def on_pin_desk_pinned(self, message: PinDesk.Pinned) -> None:
        self.query_one(LossPlot).pin(message.pin)
        self.flush_plot()

    # ---- command keys: the CommandDesk's ------------------------------------
    def action_pause_resume(self) -> None:
        self.query_one(CommandDesk).pause_resume()

    def action_advance(self) -> None:
        self.query_one(CommandDesk).advance()

    def action_checkpoint(self) -> None:
        self.query_one(CommandDesk).checkpoint()

    def action_stop(self) -> None:
        self.query_one(CommandDesk).stop()

    def action_edit_stages(self) -> None:
        self.query_one(CommandDesk).edit_stages()

    def action_scale_lr(self) -> None:
        self.query_one(CommandDesk).scale_lr()

    def action_rollback(self) -> None:
        self.query_one(CommandDesk).rollback()

    # ---- notes and a pinned baseline: the desks' ----------------------------
    def action_note(self) -> None:
        self.query_one(NotesDesk).ask_note()

    def action_tags(self) -> None:
        self.query_one(NotesDesk).ask_tags()

    def action_pin_baseline(self) -> None:
        self.query_one(PinDesk).pick()

    # ---- view keys (dashboard_plots.py) ---------------------------------------
    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def _view_changed(self, told: str, *, remember: bool = True) -> None:
        """After a view key: say what it shows now, redraw, remember it (`remember`)."""
        if told:
            self.notify(told, timeout=2)
        self.flush_plot()
        if remember:
            self.remember_view()

    def action_toggle_raw(self) -> None:
        self._view_changed(plots.toggle_raw(self))

    def action_smoothing(self, direction: int) -> None:
        self._view_changed(plots.smoothing(self, direction))

    def action_cycle_axis(self) -> None:
        """Every plot to the next x axis the run's log can draw (step, tokens, time, FLOPs)."""
        with self.session.lock:
            told = plots.cycle_axis(self, self.session.state)
        self._view_changed(told)

    def action_zoom(self, by: int) -> None:
        """[ halves the window (the latest half of the x range), ] doubles it, 0 shows all
        (a step range and the cursor go too)."""
        plots.zoom(self, by)
        self._view_changed("", remember=False)

    def action_cycle_scalar(self) -> None:
        """The plot beside the loss to the next scalar (LR, grad norm, update ratio, step
        time, tokens/s), then hidden."""
        plots.cycle_scalar(self)
        self.fit_scalar()
        self.notify(plots.scalar_shown(self), timeout=2)
        self.call_after_refresh(self.flush_plot)
        self.remember_view()

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self.fit_scalar)

    def fit_scalar(self) -> None:
        """Hide the plot beside the loss where the terminal is too short for two plots."""
        bottom = self.query_one("#ov-bottom").styles.height  # the events row, when wide
        below = 0 if self.has_class("-narrow") or bottom is None else int(bottom.value)
        plots.fit_scalar(self, self.query_one(TabbedContent).size.height, below)

    def action_step_range(self) -> None:
        """`z`: show steps A-B on every plot (empty: the whole run again)."""

        def done(value: str | None) -> None:
            if value is not None:
                told = plots.set_step_range(self, parse_step_range(value))
                self._view_changed(told, remember=False)

        current = plots.step_range_text(self)
        prompt = PromptScreen("Show steps", plots.RANGE_BODY, current, range_problem, "Show")
        self.app.push_screen(prompt, done)

    def action_cursor(self, by: int) -> None:
        """`,` / `.`: the cursor a step (1/40 of the range) left / right, on every plot."""
        with self.session.lock:
            plots.step_cursor(self, self.session.state, by)
        self.flush_plot()

    def action_filter(self) -> None:
        def done(value: str | None) -> None:
            self.set_view_filter(ViewFilter.parse(value or ""))  # Esc (None) clears

        prompt = PromptScreen(
            "Filter layers, logs and plots",
            plots.FILTER_BODY,
            self.view_filter.text,
            filter_problem,
            "Filter",
        )
        self.app.push_screen(prompt, done)

    def set_view_filter(self, view_filter: ViewFilter) -> None:
        self.view_filter = view_filter
        told = plots.apply_filter(self, view_filter)
        self.flush_text()
        self.flush_plot()
        self.notify(told, timeout=2)

    # ---- the view (tab, smoothing, x axis, plot beside the loss), remembered per run ----
    def restore_view(self) -> None:
        view = self.view_memory.load()
        if view is not None:
            apply_view(self, view)

    def remember_view(self) -> None:
        """Save the view in a worker when a view key changed it (session/view_memory.py)."""
        view = current_view(self)
        if self.view_memory.take(view):
            save = partial(self.view_memory.save, view)
            self.run_worker(save, thread=True, group="view-memory", exit_on_error=False)

    # ---- help and leaving -------------------------------------------------------
    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Run dashboard", DASHBOARD_HELP, keys_of(self)))

    def action_home(self) -> None:
        if self.view_filter.active:  # Esc clears an active filter before it leaves
            self.set_view_filter(ViewFilter())
            return
        go_home = getattr(self.app, "action_home", None)
        if go_home is not None:
            go_home()

    def action_leave(self) -> None:
        """Close the cockpit, or back to Home; training goes on (`growcockpit attach`)."""
        self.session.release()
        self.dismiss() if self.back else self.app.exit()
