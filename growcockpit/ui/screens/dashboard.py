"""The live view of one run: header, tabs (overview, layers, timing, system, events,
console, samples), commands.

The screen is a view of a `RunSession` (plain Python): a thread worker runs
the session's tail loop, which reads the run directory and folds events into
the session's `RunState`; the screen only composes, binds keys and draws.
Timers flush text at 4 Hz and plots at 2 Hz, holding the session's lock only
to read the state (no disk I/O in a timer); a plot (or the heatmap) redraws
only when its data, size or theme changed and only while it is on screen.
Commands (dashboard_commands.py, its base) go over the control socket in a thread worker, since the backend
answers at its next step boundary. Only the cockpit holding the run's
controller role (see `growcockpit.session.controller`) sends commands; others are
read-only and say so. The view keys that change no training (the `/` filter, the
run's note and tags) are dashboard_views.py's, the base above the commands.
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
from textual.widget import Widget
from textual.widgets import Footer, TabbedContent, TabPane
from textual.worker import get_current_worker

from growcockpit.session.console_tail import ConsoleTail
from growcockpit.session.fold.layers import TIMING_WINDOW
from growcockpit.session.plot_view import next_axis
from growcockpit.session.run_session import RunSession
from growcockpit.session.scalar_view import BY_KEY, next_scalar
from growcockpit.session.view_memory import RunViewMemory
from growcockpit.ui.screens.dashboard_memory import apply_view, current_view
from growcockpit.ui.screens.dashboard_views import DashboardViews
from growcockpit.ui.screens.help_texts import DASHBOARD_HELP
from growcockpit.ui.screens.prompt import HelpScreen, keys_of
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
from growcockpit.ui.widgets.loss_plot import PinStanding, axis_plots
from growcockpit.ui.widgets.samples_panel import SamplesPanel
from growcockpit.ui.widgets.scalar_plot import (
    ScalarHint,
    ScalarPlot,
    plots_room,
    squeezed,
    yield_hint,
)

TEXT_FLUSH_S = 0.25  # ≤ 4 Hz
PLOT_FLUSH_S = 0.5  # ≤ 2 Hz
TABS = ("overview", "layers", "timing", "system", "events", "console", "samples")
LAYERS_TITLE = f"layers · ms: median of the last n ≤ {TIMING_WINDOW} samples"


class DashboardScreen(DashboardViews):
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
        self.watch_notes()
        self.watch_pin()
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
        with self.state_lock:
            role = "" if self.state.finished else self.role
            self.query_one(RunHeader).show_state(self.state, self.clock(), role)
            for table in self.query(LayerTable):
                table.show_state(self.state)
            for log in self.query(EventLogPanel):
                log.show_state(self.state)
            for panel in self.query(SystemPanel):
                if self._on_screen(panel):
                    panel.show_state(self.state)
            timing = self.query_one(TimingPanel)
            if self._on_screen(timing):
                timing.show_state(self.state)
            samples = self.query_one(SamplesPanel)
            if self._on_screen(samples):
                samples.show_state(self.state)

    def flush_plot(self) -> None:
        with self.state_lock:
            for widget in (
                self.query_one(LossPlot),
                self.query_one(ScalarPlot),
                self.query_one(ThroughputPlot),
                self.query_one(LayerHeatmap),
            ):
                if self._on_screen(widget):
                    widget.show_state(self.state)
        self.query_one(PinStanding).show(self.query_one(LossPlot).standing_below)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.call_after_refresh(self._flush_all)
        self.remember_view()
        if event.pane.id == "samples":  # its ←/→ step through the evaluations
            self.query_one(SamplesPanel).focus()

    def _flush_all(self) -> None:
        self.flush_text()
        self.flush_plot()

    # ---- view keys ----------------------------------------------------------
    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def action_toggle_raw(self) -> None:
        plot = self.query_one(LossPlot)
        plot.raw = not plot.raw
        self.notify(f"loss: {plot.view.smoothing_text()}", timeout=2)
        self.flush_plot()
        self.remember_view()

    def action_cycle_axis(self) -> None:
        """Every plot to the next x axis the run's log can draw (step, tokens, time, FLOPs)."""
        with self.state_lock:
            axis = next_axis(self.state, self.query_one(LossPlot).axis)
        for plot in axis_plots(self):
            plot.axis = axis
        self.notify(self.query_one(LossPlot).view.axis_text(), timeout=2)
        self.flush_plot()
        self.remember_view()

    def action_zoom(self, by: int) -> None:
        """[ halves the window (the latest half of the x range), ] doubles it, 0 shows all
        (a step range and the cursor go too)."""
        for plot in axis_plots(self):
            plot.zoom = plot.view.zoomed(by).zoom if by else 0
            if not by:
                plot.steps, plot.cursor = None, None
        self.flush_plot()

    def action_cycle_scalar(self) -> None:
        """The plot beside the loss to the next scalar (LR, grad norm, update ratio, step
        time, tokens/s), then hidden."""
        plot = self.query_one(ScalarPlot)
        plot.scalar = next_scalar(plot.scalar)
        self.fit_scalar()
        shown = "hidden" if plot.scalar is None else BY_KEY[plot.scalar].name
        if plot.scalar is not None and plot.squeezed:
            shown += " (hidden while the terminal is this short)"
        self.notify(f"plot beside the loss: {shown}", timeout=2)
        self.call_after_refresh(self.flush_plot)
        self.remember_view()

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self.fit_scalar)

    def fit_scalar(self) -> None:
        """Hide the plot beside the loss, with a hint, where two plots leave the loss too
        few rows to read (80×24); show it again when the terminal grows."""
        plot, hint = self.query_one(ScalarPlot), self.query_one(ScalarHint)
        bottom = self.query_one("#ov-bottom").styles.height  # the events row, when wide
        below = 0 if self.has_class("-narrow") or bottom is None else int(bottom.value)
        room = plots_room(self.query_one(TabbedContent).size.height, below)
        plot.squeezed = squeezed(room)
        hint.display = plot.scalar is not None and plot.squeezed
        if plot.scalar is not None:
            hint.update(yield_hint(BY_KEY[plot.scalar].name, room))

    def action_smoothing(self, direction: int) -> None:
        plot = self.query_one(LossPlot)
        plot.raw, plot.factor = False, plot.view.smoother(direction).factor
        self.notify(f"loss: {plot.view.smoothing_text()}", timeout=2)
        self.flush_plot()
        self.remember_view()

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

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Run dashboard", DASHBOARD_HELP, keys_of(self)))

    def action_home(self) -> None:
        if self.clear_filter():  # Esc clears an active filter before it leaves
            return
        go_home = getattr(self.app, "action_home", None)
        if go_home is not None:
            go_home()

    def action_leave(self) -> None:
        """Close the cockpit, or back to Home; training goes on (`growcockpit attach`)."""
        self.session.release()
        self.dismiss() if self.back else self.app.exit()
