"""Compare runs: their train and validation loss overlaid on one x axis (step, tokens,
training time or estimated FLOPs; x cycles), each run in its own stable colour and the
target run (the baseline by default) drawn thicker; the target line (its final
validation loss), each run's verdict — how much sooner it reached the target, or how far
it still is (the same verdict as `growcockpit compare`) — and, on d, the plan keys that
differ between the runs."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label, SelectionList, Static
from textual_plotext import PlotextPlot

from growcockpit.compare import RunProgress
from growcockpit.compare.config_diff import config_diff
from growcockpit.session.catalog import RunEntry, list_runs
from growcockpit.session.compare_view import (
    Comparison,
    compare,
    compare_curves,
    load_runs,
    next_compare_axis,
    next_target,
    run_colours,
)
from growcockpit.session.plot_view import AXIS_NAMES, Curves, PlotView
from growcockpit.ui.screens.compare_table import (
    fit_columns,
    verdict_detail,
    verdict_row,
)
from growcockpit.ui.screens.prompt import HelpScreen, keys_of
from growcockpit.ui.widgets.run_picker import RunPicker
from growcockpit.ui.widgets.steady_table import SteadyTable
from growcockpit.ui.widgets.text_bits import RUN_COLOURS, rgb

CURVE_COLOURS = RUN_COLOURS
HELP = """\
Pick two or more runs on the left (space toggles one: [x] is in the comparison, [ ]
is not). The plots overlay their train
loss (smoothed by a time-weighted, debiased EMA as W&B does; < and > change the factor,
r shows the raw loss) and their validation loss, each run in its own colour (the same
every time), the target run drawn thicker. The run list is the legend: a selected run's
name is bold in its curve's colour, an unselected one dim. x cycles the x axis: step, tokens, training
time (evaluations and pauses left out) and the estimated FLOPs of the steps trained
(the plan's cost model); [ and ] halve and double the window shown, 0 shows it all.
Vertical lines mark stage changes. The horizontal line is the target: the final
validation loss of the target run (a baseline by default; g picks the next run). The
table says how much sooner each run reached it, in time and in FLOPs, or, if it has
not, how many more steps the current slope needs; the run highlighted in the list (▸ in
the table) has its verdict whole under the list. When the target run leaves the
selection the next one is named. d shows instead the plan keys whose
values differ between the selected runs. Esc goes back."""
TARGET_MARKER = "hd"  # half blocks: thicker than the others' braille


SIDE_MIN = 26  # the run list's width: at least this, the longest name + SIDE_EXTRA
SIDE_EXTRA = 10  # toggle 4, border 2, padding 2, a scrollbar 2; up to 2/5 of the screen


def listed_runs(runs: list[RunEntry], wanted: list[Path]) -> list[RunEntry]:
    """The runs under the runs folder, then any run asked for that lives elsewhere (a race's
    run, a --run-dir): left out of the list, it was silently left out of the comparison."""
    here = {r.path.resolve() for r in runs}
    extra = [p for p in dict.fromkeys(wanted) if p not in here and p.is_dir()]
    return runs + [RunEntry(p, p.name, "unknown") for p in extra]


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
        Binding("x", "cycle_axis", "X axis"),
        Binding("d", "toggle_diff", "Config diff"),
        Binding("r", "toggle_raw", "Raw/smoothed", show=False),
        Binding("left_square_bracket", "zoom(1)", "Zoom in", show=False, key_display="["),
        Binding("right_square_bracket", "zoom(-1)", "Zoom out", show=False, key_display="]"),
        Binding("0", "zoom(0)", "Zoom reset", show=False),
        Binding("<", "smoothing(-1)", "Less smoothing", show=False),
        Binding(">", "smoothing(1)", "More smoothing", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    class RunsLoaded(Message):
        def __init__(self, paths: list[Path], runs: list[RunProgress]) -> None:
            super().__init__()
            self.paths = paths  # the selection they were read for
            self.runs = runs

    def __init__(self, runs_root: Path, selected: list[Path] | None = None) -> None:
        super().__init__()
        self.runs_root = Path(runs_root)
        self.initial = [Path(p).resolve() for p in (selected or [])]
        self.comparison = Comparison([], None, [])
        self.target_name: str | None = None
        self.entries: list[RunEntry] = []
        self.name_room = SIDE_MIN - SIDE_EXTRA
        self.view = PlotView(axis="time")  # the verdict's own axis first
        self.show_diff = False
        self.colours: dict[str, int] = {}

    def compose(self) -> ComposeResult:
        with Horizontal(id="compare-body"):
            with Vertical(id="compare-side"):
                yield RunPicker(id="compare-runs")
                yield Label("", id="compare-target", markup=False)  # a run name
                yield Static("", id="compare-detail")
            with Vertical(id="compare-main"):
                yield PlotextPlot(id="compare-train")
                yield PlotextPlot(id="compare-val")
                yield SteadyTable[str | Text](id="compare-table", cursor_type="none")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        runs = listed_runs(list_runs(self.runs_root), self.initial)
        sel = self.query_one(SelectionList)
        sel.border_title = "runs (space selects)"
        chosen = set(self.initial)
        if len(chosen) < 2:  # a useful default: the highlighted run plus the most recent others
            for r in runs:
                if len(chosen) >= 2:
                    break
                chosen.add(r.path.resolve())
        self.entries = runs
        self.colours = run_colours([r.name for r in runs], len(CURVE_COLOURS))
        for r in runs:
            sel.add_option((r.name, str(r.path), r.path.resolve() in chosen))
        longest = max((len(r.name) for r in runs), default=0)  # names whole where they fit
        side_w = max(SIDE_MIN, min(longest + SIDE_EXTRA, self.size.width * 2 // 5))
        self.query_one("#compare-side").styles.width = side_w
        self.name_room = side_w - SIDE_EXTRA
        self._mark_selected()
        if runs:
            sel.highlighted = 0  # the detail pane has a run to show from the start
        self.load()

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged[str]) -> None:
        self._mark_selected()
        self.load()

    def on_selection_list_selection_highlighted(
        self, event: SelectionList.SelectionHighlighted[str]
    ) -> None:
        self._table()

    def _mark_selected(self) -> None:
        """A selected run reads in its curve's colour and bold, an unselected one dim."""
        sel = self.query_one(SelectionList)
        chosen = {str(p) for p in sel.selected}
        for i, r in enumerate(self.entries):
            colour = self.colour_of(r.name) if str(r.path) in chosen else None
            sel.replace_option_prompt_at_index(i, run_prompt(r.name, colour, self.name_room))

    def colour_of(self, name: str) -> str:
        """The run's stable colour (one not listed, e.g. unreadable, hashes on its own)."""
        if name not in self.colours:
            self.colours.update(run_colours([name], len(CURVE_COLOURS)))
        return CURVE_COLOURS[self.colours[name]]

    def selected_paths(self) -> list[Path]:
        return [Path(p) for p in self.query_one(SelectionList).selected]

    def load(self) -> None:
        self._load_worker(self.selected_paths())

    @work(thread=True, exclusive=True, group="compare", exit_on_error=False)
    def _load_worker(self, paths: list[Path]) -> None:
        self.post_message(self.RunsLoaded(paths, load_runs(paths)))

    def on_compare_screen_runs_loaded(self, message: RunsLoaded) -> None:
        """Draw the runs read, unless the selection changed since: a thread worker is not
        stopped by a newer one, so an older, slower read would replace the newer one."""
        if message.paths != self.selected_paths():
            return
        names = [r.name for r in message.runs]
        before = self.target_name
        keep = names.index(before) if before in names else None
        self._show(compare(message.runs, keep))
        if before is not None and self.target_name != before:  # it left the selection
            now = f"the target is now {self.target_name}" if self.target_name else "no target"
            self.notify(f"{before} is not selected: {now}", title="Target changed", timeout=6)

    def action_next_target(self) -> None:
        self._show(compare(self.comparison.runs, next_target(self.comparison)))
        if self.target_name is not None:
            self.notify(f"target: {self.target_name}", timeout=2)

    def _show(self, comparison: Comparison) -> None:
        self.comparison = comparison
        target = comparison.target
        self.target_name = comparison.runs[target].name if target is not None else None
        label = self.query_one("#compare-target", Label)
        goal = comparison.target_loss
        label.update(
            f"target: {self.target_name}\n(the thick line)\nfinal val loss {goal:.3f}\n(g: next run)"
            if goal is not None
            else "target: no run has evaluated yet"
        )
        self.redraw()

    def on_resize(self, event: events.Resize) -> None:
        """Re-downsample for the new width (plotext would stretch the old points)."""
        self.call_after_refresh(self.redraw)

    def redraw(self) -> None:
        width = max(10, self.query_one("#compare-val").size.width)
        shown = compare_curves(self.comparison.runs, self.view, 2 * width)
        axis = AXIS_NAMES[self.view.axis]
        zoom = f" · zoom ×{2**self.view.zoom}" if self.view.zoom else ""
        smoothing = self.view.smoothing_text()
        titles = {
            "train": f"train loss ({smoothing}) vs {axis}{zoom}",
            "val": f"val loss vs {axis}{zoom}",
        }
        for kind, title in titles.items():
            plot = self.query_one(f"#compare-{kind}", PlotextPlot)
            plot.border_title = title
            self._plot(plot, kind, shown)
        self._table()

    def _plot(self, plot: PlotextPlot, kind: str, shown: Curves) -> None:
        runs, target = self.comparison.runs, self.comparison.target
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        plt.xlabel(shown.xlabel)
        if shown.span is not None and shown.span[1] > shown.span[0]:
            plt.xlim(*shown.span)  # both plots show one window: runs line up across them
        drawn = False
        for i, run in enumerate(runs):
            curve = shown.curves.get(f"{kind}:{i}")
            if curve is None:
                continue
            drawn = True
            marker = TARGET_MARKER if i == target else "braille"
            # no label: plotext's legend box sits top left, where loss curves start, and
            # hid short runs whole; the run list names each colour
            plt.plot(curve.xs, curve.ys, marker=marker, color=rgb(self.colour_of(run.name)))
        if drawn:
            for x, index in shown.markers:
                plt.vline(x, rgb(self.colour_of(runs[int(index)].name)))
        goal = self.comparison.target_loss
        if drawn and goal is not None and kind == "val":
            plt.hline(goal, "gray")
        if not drawn:
            what = "evaluated" if kind == "val" else "trained"
            plt.title(f"select runs that have {what} to compare")
        plot.refresh()

    def _table(self) -> None:
        table = self.query_one("#compare-table", DataTable)
        table.clear(columns=True)
        c = self.comparison
        table.border_subtitle = "" if self.show_diff else c.gate
        if self.show_diff:
            self._diff_table(table)
            return
        table.border_title = "verdicts (d: config diff)"
        widths = fit_columns(
            self.query_one("#compare-main").size.width - 1,  # a vertical scrollbar's room
            [r.name for r in c.runs],
            [r.plan_name for r in c.runs],
        )
        for col, width in widths.columns:
            table.add_column(col, key=col, width=width)
        lit = self._highlighted_name()
        detail = verdict_detail(None, None, lit or "", "")
        for i, run in enumerate(c.runs):
            v = c.verdicts[i] if i < len(c.verdicts) else None
            name, *cells = verdict_row(run, v, widths, run.name == lit)
            style = self.colour_of(run.name) + (" bold" if i == c.target else "")
            table.add_row(Text(name, style=style), *cells)
            if run.name == lit:
                detail = verdict_detail(run, v, run.name, c.gate)
        self.query_one("#compare-detail", Static).update(Text(detail if lit else ""))

    def _highlighted_name(self) -> str | None:
        """The run the list's highlight is on (its verdict is shown whole)."""
        sel = self.query_one(SelectionList)
        i = sel.highlighted
        return self.entries[i].name if i is not None and 0 <= i < len(self.entries) else None

    def _diff_table(self, table: DataTable[str | Text]) -> None:
        """The plan keys whose values differ between the selected runs, one column a run."""
        runs = self.comparison.runs
        rows = config_diff([r.plan for r in runs])
        table.border_title = "config diff: plan keys that differ (d: verdicts)"
        table.add_column("key", key="key")
        for i, run in enumerate(runs):
            table.add_column(Text(run.name, style=self.colour_of(run.name)), key=f"run{i}")
        for key, values in rows:
            table.add_row(key, *values)
        if not rows:
            note = "the selected runs' plans are the same" if len(runs) > 1 else "select two runs"
            table.add_row(Text(note, style="dim"), *([""] * len(runs)))

    # ---- view keys ----------------------------------------------------------
    def _set_view(self, view: PlotView, note: str = "") -> None:
        self.view = view
        if note:
            self.notify(note, timeout=2)
        self.redraw()

    def action_cycle_axis(self) -> None:
        axis = next_compare_axis(self.comparison.runs, self.view.axis)
        self._set_view(PlotView(axis, self.view.zoom, self.view.factor, self.view.raw))
        self.notify(f"x: {AXIS_NAMES[axis]}", timeout=2)

    def action_zoom(self, by: int) -> None:
        self._set_view(self.view.zoomed(by) if by else self.view.zoomed(-self.view.zoom))

    def action_smoothing(self, direction: int) -> None:
        view = self.view.smoother(direction)
        view = PlotView(view.axis, view.zoom, view.factor, False)
        self._set_view(view, f"train loss: {view.smoothing_text()}")

    def action_toggle_raw(self) -> None:
        view = PlotView(self.view.axis, self.view.zoom, self.view.factor, not self.view.raw)
        self._set_view(view, f"train loss: {view.smoothing_text()}")

    def action_toggle_diff(self) -> None:
        self.show_diff = not self.show_diff
        self._table()

    def action_back(self) -> None:
        self.dismiss(None)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Compare runs", HELP, keys_of(self)))
