"""Compare runs: validation loss against training time and against estimated FLOPs, the
target line (one run's final validation loss) and each run's verdict — how much sooner
it reached the target, or how far it still is (the same verdict as `growcockpit compare`)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label, SelectionList
from textual_plotext import PlotextPlot

from growcockpit.compare import RunProgress
from growcockpit.session.catalog import RunEntry, list_runs
from growcockpit.session.compare_view import (
    Axis,
    Comparison,
    compare,
    flop_unit,
    load_runs,
    next_target,
    series,
    short_verdict,
)
from growcockpit.ui.screens.prompt import HelpScreen, keys_of
from growcockpit.ui.widgets.steady_table import SteadyTable

CURVE_COLOURS = ("cyan", "magenta", "green", "yellow", "red", "blue", "white", "orange")
HELP = """\
Pick two or more runs on the left (space toggles one). The plots overlay their
validation loss against training time (evaluations and pauses left out) and against
the estimated FLOPs of the steps they trained (the plan's cost model); vertical
lines mark stage changes. The horizontal line is the target: the final validation
loss of the target run (a baseline by default; g picks the next run). The table says
how much sooner each run reached it, in time and in FLOPs, or, if it has not, how
many more steps the current slope needs."""
PLOTS: tuple[tuple[str, Axis, str], ...] = (
    ("#compare-time", "wall", "val loss vs training time"),
    ("#compare-flops", "flops", "val loss vs estimated FLOPs"),
)


SIDE_MIN = 26  # the run list's width: at least this, the longest name + SIDE_EXTRA
SIDE_EXTRA = 8  # (toggle, border, scrollbar), up to 2/5 of the screen


def run_prompt(name: str, colour: str | None, room: int) -> Text:
    """A run in the list, in its curve's `colour` and bold when selected, dim when not.

    Whole when it fits `room`; else its head and its tail (the launch time that tells
    runs of one plan apart) around a …, never just cut at the end.
    """
    if len(name) > room > 12:
        tail = min(len(name) // 2, 16, room // 2)
        name = f"{name[: room - tail - 1]}…{name[-tail:]}"
    return Text(name, style=f"bold {colour}" if colour else "dim")


class CompareScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("g", "next_target", "Target run"),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    class RunsLoaded(Message):
        def __init__(self, runs: list[RunProgress]) -> None:
            super().__init__()
            self.runs = runs

    def __init__(self, runs_root: Path, selected: list[Path] | None = None) -> None:
        super().__init__()
        self.runs_root = Path(runs_root)
        self.initial = [Path(p).resolve() for p in (selected or [])]
        self.comparison = Comparison([], None, [])
        self.target_name: str | None = None
        self.entries: list[RunEntry] = []
        self.name_room = SIDE_MIN - SIDE_EXTRA

    def compose(self) -> ComposeResult:
        with Horizontal(id="compare-body"):
            with Vertical(id="compare-side"):
                yield SelectionList[str](id="compare-runs")
                yield Label("", id="compare-target")
            with Vertical(id="compare-main"):
                yield PlotextPlot(id="compare-time")
                yield PlotextPlot(id="compare-flops")
                yield SteadyTable[str | Text](id="compare-table", cursor_type="none")
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
        self.entries = runs
        for r in runs:
            sel.add_option((r.name, str(r.path), r.path.resolve() in chosen))
        longest = max((len(r.name) for r in runs), default=0)  # names whole where they fit
        side_w = max(SIDE_MIN, min(longest + SIDE_EXTRA, self.size.width * 2 // 5))
        self.query_one("#compare-side").styles.width = side_w
        self.name_room = side_w - SIDE_EXTRA
        for wid, _, title in PLOTS:
            self.query_one(wid).border_title = title
        table = self.query_one("#compare-table", DataTable)
        for col in ("run", "final val", "verdict", "plan"):
            table.add_column(col, key=col)
        self._mark_selected()
        self.load()

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged[str]) -> None:
        self._mark_selected()
        self.load()

    def _mark_selected(self) -> None:
        """A selected run reads in its curve's colour and bold, an unselected one dim."""
        sel = self.query_one(SelectionList)
        order = [str(p) for p in sel.selected]
        for i, r in enumerate(self.entries):
            key = str(r.path)
            colour = CURVE_COLOURS[order.index(key) % len(CURVE_COLOURS)] if key in order else None
            sel.replace_option_prompt_at_index(i, run_prompt(r.name, colour, self.name_room))

    def load(self) -> None:
        self._load_worker([Path(p) for p in self.query_one(SelectionList).selected])

    @work(thread=True, exclusive=True, group="compare", exit_on_error=False)
    def _load_worker(self, paths: list[Path]) -> None:
        self.post_message(self.RunsLoaded(load_runs(paths)))

    def on_compare_screen_runs_loaded(self, message: RunsLoaded) -> None:
        names = [r.name for r in message.runs]
        keep = names.index(self.target_name) if self.target_name in names else None
        self._show(compare(message.runs, keep))

    def action_next_target(self) -> None:
        self._show(compare(self.comparison.runs, next_target(self.comparison)))

    def _show(self, comparison: Comparison) -> None:
        self.comparison = comparison
        target = comparison.target
        self.target_name = comparison.runs[target].name if target is not None else None
        label = self.query_one("#compare-target", Label)
        goal = comparison.target_loss
        label.update(
            f"target: {self.target_name}\nfinal val loss {goal:.3f}\n(g: next run)"
            if goal is not None
            else "target: no run has evaluated yet"
        )
        self.redraw()

    def redraw(self) -> None:
        runs = self.comparison.runs
        unit, scale = flop_unit(runs)
        for wid, axis, _ in PLOTS:
            plot = self.query_one(wid, PlotextPlot)
            plt = plot.plt
            plt.clear_data()
            plt.clear_figure()
            plt.xlabel("training seconds" if axis == "wall" else f"estimated {unit}")
            drawn = False
            for i, run in enumerate(runs):
                xs, ys, marks = series(run, axis, scale)
                if not xs:
                    continue
                drawn = True
                colour = CURVE_COLOURS[i % len(CURVE_COLOURS)]
                plt.plot(xs, ys, label=run.name[-28:], marker="braille", color=colour)
                for x in marks:
                    plt.vline(x, colour)
            if drawn and self.comparison.target_loss is not None:
                plt.hline(self.comparison.target_loss, "gray")
            if not drawn:
                plt.title("select runs that have evaluated to compare")
            plot.refresh()
        self._table()

    def _table(self) -> None:
        table = self.query_one("#compare-table", DataTable)
        table.clear()
        c = self.comparison
        for i, (run, v) in enumerate(zip(c.runs, c.verdicts, strict=False)):
            table.add_row(
                Text(run.name, style=CURVE_COLOURS[i % len(CURVE_COLOURS)]),
                "–" if run.final_val_loss is None else f"{run.final_val_loss:.3f}",
                short_verdict(v),
                run.plan_name,
            )

    def action_back(self) -> None:
        self.dismiss(None)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Compare runs", HELP, keys_of(self)))
