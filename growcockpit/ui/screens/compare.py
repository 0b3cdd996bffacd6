"""Compare runs: loss against training time and against tokens, and the time each run
took to reach a chosen loss (e.g. an MSLT run against its full-depth baseline)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Label, SelectionList
from textual_plotext import PlotextPlot

from growcockpit.ui.catalog import list_runs
from growcockpit.ui.compare import RunCurve, default_target, load_curve, time_to_loss
from growcockpit.ui.screens.prompt import HelpScreen, keys_of
from growcockpit.ui.widgets.run_header import format_duration
from growcockpit.ui.widgets.text_bits import human_count

CURVE_COLOURS = ("cyan", "magenta", "green", "yellow", "red", "blue", "white", "orange")
HELP = """\
Pick two or more runs on the left (space toggles one). The plots overlay their
smoothed train loss against training time (pauses left out) and against tokens seen;
vertical lines mark each run's stage changes. The table says when each run first
reached the target loss, and how much faster than the slowest it got there."""


def fmt_time(seconds: float) -> str:
    return format_duration(seconds) if seconds >= 60 else f"{seconds:.1f}s"


class CompareScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    class CurvesLoaded(Message):
        def __init__(self, curves: list[RunCurve]) -> None:
            super().__init__()
            self.curves = curves

    def __init__(self, runs_root: Path, selected: list[Path] | None = None) -> None:
        super().__init__()
        self.runs_root = Path(runs_root)
        self.initial = [Path(p).resolve() for p in (selected or [])]
        self.curves: list[RunCurve] = []
        self.target: float | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="compare-body"):
            with Vertical(id="compare-side"):
                yield SelectionList[str](id="compare-runs")
                yield Label("target loss")
                yield Input("", id="compare-target", compact=True, placeholder="e.g. 5.5")
            with Vertical(id="compare-main"):
                yield PlotextPlot(id="compare-time")
                yield PlotextPlot(id="compare-tokens")
                yield DataTable(id="compare-table", cursor_type="none")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        runs = list_runs(self.runs_root)
        sel = self.query_one(SelectionList)
        sel.border_title = "runs (space selects)"
        chosen = set(self.initial)
        if len(chosen) < 2:  # a useful default: the highlighted run plus the most recent others
            for r in runs:
                if len(chosen) >= 2:
                    break
                chosen.add(r.path.resolve())
        for r in runs:
            sel.add_option((f"{r.name} ({r.status})", str(r.path), r.path.resolve() in chosen))
        self.query_one("#compare-time").border_title = "loss vs training time"
        self.query_one("#compare-tokens").border_title = "loss vs tokens"
        table = self.query_one("#compare-table", DataTable)
        for col in ("run", "plan", "final loss", "time to target", "tokens to target", "speed"):
            table.add_column(col, key=col)
        self.load()

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged[str]) -> None:
        self.load()

    def load(self) -> None:
        paths = [Path(p) for p in self.query_one(SelectionList).selected]
        self._load_worker(paths)

    @work(thread=True, exclusive=True, group="compare", exit_on_error=False)
    def _load_worker(self, paths: list[Path]) -> None:
        self.post_message(self.CurvesLoaded([load_curve(p) for p in paths]))

    def on_compare_screen_curves_loaded(self, message: CurvesLoaded) -> None:
        self.curves = message.curves
        target_input = self.query_one("#compare-target", Input)
        if not target_input.value.strip():
            self.target = default_target(self.curves)
            if self.target is not None:
                with target_input.prevent(Input.Changed):
                    target_input.value = f"{self.target:.3f}"
        self.redraw()

    def on_input_changed(self, event: Input.Changed) -> None:
        try:
            self.target = float(event.value)
        except ValueError:
            return
        self.redraw()

    def redraw(self) -> None:
        for wid, attr, stage_attr, label in (
            ("#compare-time", "t", "stage_t", "training seconds"),
            ("#compare-tokens", "tokens", "stage_tokens", "tokens"),
        ):
            plot = self.query_one(wid, PlotextPlot)
            plt = plot.plt
            plt.clear_data()
            plt.clear_figure()
            plt.xlabel(label)
            for i, c in enumerate(self.curves):
                xs = getattr(c, attr)
                if not xs:
                    continue
                colour = CURVE_COLOURS[i % len(CURVE_COLOURS)]
                plt.plot(xs, c.loss, label=c.name[-28:], marker="braille", color=colour)
                for x in getattr(c, stage_attr):
                    plt.vline(x, colour)
            if self.target is not None and any(c.loss for c in self.curves):
                plt.hline(self.target, "gray")
            if not any(c.loss for c in self.curves):
                plt.title("select runs with steps to compare")
            plot.refresh()
        self._table()

    def _table(self) -> None:
        table = self.query_one("#compare-table", DataTable)
        table.clear()
        reached = {
            c.name: time_to_loss(c, self.target) if self.target is not None else None
            for c in self.curves
        }
        slowest = max((r[0] for r in reached.values() if r), default=None)
        for i, c in enumerate(self.curves):
            r = reached[c.name]
            speed = f"{slowest / r[0]:.2f}×" if r and slowest and r[0] > 0 else "–"
            table.add_row(
                Text(c.name, style=CURVE_COLOURS[i % len(CURVE_COLOURS)]),
                c.plan,
                "–" if c.final_loss is None else f"{c.final_loss:.3f}",
                fmt_time(r[0]) if r else "not reached",
                human_count(r[1]) if r else "–",
                speed,
            )

    def action_back(self) -> None:
        self.dismiss(None)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Compare runs", HELP, keys_of(self)))
