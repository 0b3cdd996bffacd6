"""Home: the plans (shipped samples and your own) and the runs under runs/.

Enter opens the highlighted plan (designer) or run (dashboard); `n` starts a new
plan, `a` attaches to the highlighted run, `c` compares runs. The runs list
refreshes itself every couple of seconds from each run's status.json.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from growcockpit.plan import PlanError, load_plan
from growcockpit.plan.init_from import SourceError, grow_plan_from
from growcockpit.plan.types import Plan
from growcockpit.protocol.rundir import RunPaths
from growcockpit.session.catalog import PlanEntry, RunEntry, list_plans
from growcockpit.session.home_runs import HomeRuns
from growcockpit.session.race_view import RACES_DIR
from growcockpit.session.run_columns import (
    RunRow,
    SortSpec,
    available_columns,
    columns_problem,
    columns_text,
    filter_problem,
    next_sort,
    parse_columns,
    parse_filter,
)
from growcockpit.ui.screens.prompt import HelpScreen, PromptScreen, keys_of
from growcockpit.ui.type_ahead import hold_keys
from growcockpit.ui.widgets.race_list import RaceList
from growcockpit.ui.widgets.runs_table import RunsTable, RunsView, runs_view
from growcockpit.ui.widgets.steady_table import SteadyTable

REFRESH_S = 2.0
FIRST_READ_HERE = 50  # up to this many runs are listed before the first frame; more: a worker
HELP = """\
growcockpit designs, launches, watches and steers training runs that grow a
transformer stage by stage (MSLT, progressive stacking, V-cycles).

Plans are TOML files: the shipped samples, and yours (*.toml here or in plans/).
Open one (Enter) to edit its stages, see its cost and launch it. Runs live under
runs/: each keeps training when you leave the cockpit; open one (Enter or a) to
watch and steer it, or compare two or more (c). Races (growcockpit race) in
races/ are listed below the runs once there are any: Enter opens one.

n starts a new plan; g starts one that grows the highlighted finished run's final
model; r refreshes the runs list (it also refreshes itself every few seconds); q quits.
The notes column shows each run's tags and note: set them on its dashboard (T, N)
or with `growcockpit tag RUN a,b` and `growcockpit note RUN "text"`.

o picks extra run columns: plan keys (model.family, optim.lr, stages …), tags, note,
or #TAG (a mark on the runs with that tag); they are remembered. s sorts by the next
column (or click a header), S reverses; numbers sort as numbers, runs without a value
last. / filters the runs: #TAG (or tag:TAG) keeps the tagged ones, other words must
appear in the row; Esc clears it."""


def _short(path: Path) -> str:
    """Relative to the working directory when inside it (short, and stable in snapshots)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def plan_labels(plans: list[PlanEntry]) -> list[str]:
    """Each plan's name, and where two plans share one (a copied file), its file too:
    two identical rows could not be told apart. The file name, or its path where the
    names of those files match as well."""
    names = Counter(p.name for p in plans)
    files = Counter(p.path.name for p in plans if names[p.name] > 1)
    labels = []
    for p in plans:
        if names[p.name] < 2:
            labels.append(p.name)
        else:
            labels.append(f"{p.name} · {p.path.name if files[p.path.name] < 2 else _short(p.path)}")
    return labels


class HomeScreen(Screen[None]):
    BINDINGS = [
        # priority: the open runs as Enter arrives, so the keys typed after it wait for the
        # screen it opens (type-ahead) instead of reaching this one first
        Binding("enter", "open", "Open", show=True, priority=True),
        Binding("n", "new_plan", "New plan"),
        Binding("a", "attach", "Attach"),
        Binding("c", "compare", "Compare"),
        Binding("g", "grow_run", "Grow run"),
        Binding("r", "refresh", "Refresh", show=False),
        Binding("o", "columns", "Run columns (plan keys, tags)", show=False),
        Binding("s", "sort_next", "Sort runs by the next column", show=False),
        Binding("S", "sort_reverse", "Reverse the runs' sort", show=False),
        Binding("slash", "filter", "Filter runs (#tag, words)", show=False, key_display="/"),
        Binding("escape", "clear_filter", "Clear the runs filter", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "app.quit", "Quit"),
    ]

    class OpenPlan(Message):
        """Open a plan file (None: a new plan; `plan`: this unsaved draft)."""

        def __init__(self, path: Path | None, plan: Plan | None = None) -> None:
            super().__init__()
            self.path = path
            self.plan = plan

    class OpenRun(Message):
        def __init__(self, path: Path) -> None:
            super().__init__()
            self.path = path

    class OpenCompare(Message):
        def __init__(self, paths: list[Path]) -> None:
            super().__init__()
            self.paths = paths

    def __init__(
        self, runs_root: Path, workdir: Path | None = None, samples: Path | None = None
    ) -> None:
        super().__init__()
        self.runs_root = Path(runs_root)
        self.workdir = workdir
        self.samples = samples
        self.plans: list[PlanEntry] = []
        self.runs: list[RunEntry] = []  # as shown: filtered and sorted
        self.rows: list[RunRow] = []  # every run, as last read
        self.table_model = HomeRuns(self.runs_root)

    def compose(self) -> ComposeResult:
        yield Static(
            "growcockpit · design, launch, watch and steer growing-transformer runs",
            id="home-title",
        )
        with Vertical(id="home-body"):
            yield SteadyTable[str | Text](id="plans-table", cursor_type="row", zebra_stripes=True)
            yield RunsTable(id="runs-table")
            yield RaceList(self.runs_root.parent / RACES_DIR)  # shown once there are races
        yield Footer(compact=True)

    def on_mount(self) -> None:
        plans = self.query_one("#plans-table", DataTable)
        plans.border_title = "plans · Enter opens · n new"
        for col in ("plan", "from", "stages", "steps", "layers", "about"):
            plans.add_column(col, key=col)
        runs = self.query_one(RunsTable)
        runs.border_title = (
            f"runs in {_short(self.runs_root)}/ · Enter or a attaches · c compares · g grows"
        )
        self.load_plans()
        if self.table_model.count_at_most(FIRST_READ_HERE):
            self.show_runs(self.table_model.read())  # listed in the first frame
        else:
            runs.loading = True  # hundreds of runs: read in the worker, the screen is up
            self.action_refresh()
        plans.focus()
        self.set_interval(REFRESH_S, self.action_refresh)

    def on_screen_resume(self) -> None:
        self.load_plans()
        self.action_refresh()

    # ---- data -----------------------------------------------------------------
    def load_plans(self) -> None:
        self.plans = list_plans(self.workdir, self.samples)
        table = self.query_one("#plans-table", DataTable)
        cursor = table.cursor_row
        table.clear()
        for i, (p, label) in enumerate(zip(self.plans, plan_labels(self.plans), strict=True)):
            about = p.problem or p.description
            table.add_row(
                Text(label, style="bold"),
                Text(p.origin, style="dim" if p.origin == "sample" else "green"),
                str(p.stages),
                str(p.steps),
                str(p.final_layers),
                about[:60] + ("…" if len(about) > 60 else ""),
                key=str(i),
            )
        if self.plans:
            table.move_cursor(row=min(cursor, len(self.plans) - 1), animate=False)

    @work(thread=True, exclusive=True, group="runs", exit_on_error=False)
    def _refresh_worker(self) -> None:
        """Read the runs and build their table off the event loop (hundreds of runs)."""
        model = self.table_model
        rows = model.read()
        view = runs_view(rows, model.columns, model.sort, model.only, self._now())
        self.app.call_from_thread(self._show_view, rows, view)

    def action_refresh(self) -> None:
        self._refresh_worker()

    def show_runs(self, rows: list[RunRow]) -> None:
        """Draw the runs read last (filtered and sorted as the user chose)."""
        self.rows = rows
        self.redraw_runs()

    def _show_view(self, rows: list[RunRow], view: RunsView) -> None:
        model = self.table_model
        if (view.columns, view.sort, view.only) != (model.columns, model.sort, model.only):
            self.show_runs(rows)  # the user changed the table while the worker read
            return
        self.rows = rows
        self._draw(view)

    def redraw_runs(self) -> None:
        model = self.table_model
        self._draw(runs_view(self.rows, model.columns, model.sort, model.only, self._now()))

    def _draw(self, view: RunsView) -> None:
        self.runs = [r.entry for r in view.rows]
        table = self.query_one(RunsTable)
        table.loading = False
        table.draw(view)
        parts = [f"sorted by {view.sort.text()}"] if view.sort else []
        if view.only.active:
            parts.append(f"filter {view.only.text()}: {len(view.rows)} of {len(self.rows)}")
        table.border_subtitle = " · ".join(parts)

    # ---- the runs table's columns, sort and filter ----------------------------------
    def action_columns(self) -> None:
        model = self.table_model
        offered = ", ".join(available_columns(self.rows)) or "none yet"  # all: the body scrolls

        def done(value: str | None) -> None:
            if value is None:
                return
            if not model.set_columns(parse_columns(value)):
                self.notify("could not save the columns: this session only", severity="warning")
            self.redraw_runs()

        body = f"Extra run columns, comma-separated, e.g. model.family, optim.lr, #baseline. Known: {offered}"
        self.app.push_screen(
            PromptScreen("Run columns", body, columns_text(model.columns), columns_problem),
            done,
        )

    def _sort(self, sort: SortSpec | None) -> None:
        if not self.table_model.set_sort(sort):
            self.notify("could not save the sort order: this session only", severity="warning")
        self.redraw_runs()

    def action_sort_next(self) -> None:
        """Sort by the next column, left to right; after the last, back to the default
        order (live runs first, then the most recently updated)."""
        order = self.query_one(RunsTable).column_order()
        sort = self.table_model.sort
        i = order.index(sort.column) if sort is not None and sort.column in order else -1
        self._sort(SortSpec(order[i + 1]) if i + 1 < len(order) else None)

    def action_sort_reverse(self) -> None:
        sort = self.table_model.sort
        if sort is None:
            self.notify("not sorted yet: s sorts by a column, or click its header", timeout=3)
            return
        self._sort(SortSpec(sort.column, not sort.descending))

    def on_runs_table_sort_clicked(self, message: RunsTable.SortClicked) -> None:
        self._sort(next_sort(self.table_model.sort, message.column))

    def action_filter(self) -> None:
        def done(value: str | None) -> None:
            if value is not None:
                self.table_model.only = parse_filter(value)
                self.redraw_runs()

        body = "#TAG or tag:TAG keeps the runs with that tag; other words must appear in the row (any case). Empty shows all."
        self.app.push_screen(
            PromptScreen("Filter runs", body, self.table_model.only.text(), filter_problem),
            done,
        )

    def action_clear_filter(self) -> None:
        if self.table_model.only.active:
            self.table_model.only = parse_filter("")
            self.redraw_runs()

    def _now(self) -> float:
        clock = getattr(self.app, "clock", time.time)
        return float(clock())

    # ---- keys -------------------------------------------------------------------
    def _selected_run(self) -> RunEntry | None:
        table = self.query_one("#runs-table", DataTable)
        if not self.runs:
            return None
        return self.runs[min(table.cursor_row, len(self.runs) - 1)]

    def action_open(self) -> None:
        if isinstance(self.focused, RaceList):
            self.focused.open_selected()
            return
        if self.focused is self.query_one("#runs-table"):
            self.action_attach()
            return
        table = self.query_one("#plans-table", DataTable)
        if self.plans:
            self._open(self.OpenPlan(self.plans[table.cursor_row].path))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.data_table.id == "runs-table":
            self.action_attach()
        elif self.plans:
            self._open(self.OpenPlan(self.plans[event.cursor_row].path))

    def action_new_plan(self) -> None:
        self._open(self.OpenPlan(None))

    def action_attach(self) -> None:
        run = self._selected_run()
        if run is None:
            self.notify(
                "No runs yet: open a plan (Enter) and launch it (l).", title="Nothing to attach to"
            )
            return
        self._open(self.OpenRun(run.path))

    def action_compare(self) -> None:
        if len(self.runs) < 1:
            self.notify("Compare needs runs: launch a plan first.", title="Nothing to compare")
            return
        run = self._selected_run()
        self._open(self.OpenCompare([run.path] if run else []))

    def action_grow_run(self) -> None:
        """A new plan that starts from the highlighted run's final model (model.init_from)."""
        run = self._selected_run()
        if run is None:
            self.notify("No runs yet: launch a plan first.", title="Nothing to grow")
            return
        try:
            plan = grow_plan_from_run(run.path)
        except (PlanError, SourceError, OSError) as exc:
            self.notify(str(exc).splitlines()[0], title="Cannot grow this run", severity="warning")
            return
        self._open(self.OpenPlan(None, plan))

    def _open(self, message: Message) -> None:
        """Ask the app for a screen; the keys pressed until it is up go to it (type-ahead)."""
        hold_keys(self.app)
        self.post_message(message)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("growcockpit", HELP, keys_of(self)))


def grow_plan_from_run(run_dir: Path) -> Plan:
    """The "grow this" plan of a finished run: its plan, starting from its `final/` model."""
    final = RunPaths(run_dir).final
    if not (final / "config.json").is_file():
        raise SourceError(f"{run_dir.name} has no final model yet: grow a run once it has finished")
    run_plan = load_plan(RunPaths(run_dir).plan, validate=False)
    return grow_plan_from(run_plan, _short(final), run_dir.name)
