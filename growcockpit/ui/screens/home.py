"""Home: the plans (shipped samples and your own) and the runs under runs/.

Enter opens the highlighted plan (designer) or run (dashboard); `n` starts a new
plan, `a` attaches to the highlighted run, `c` compares runs. The runs list
refreshes itself every couple of seconds from each run's status.json.
"""

from __future__ import annotations

import time
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
from growcockpit.session.catalog import PlanEntry, RunEntry, format_age, list_plans, list_runs
from growcockpit.session.race_view import RACES_DIR
from growcockpit.ui.screens.prompt import HelpScreen, keys_of
from growcockpit.ui.type_ahead import hold_keys
from growcockpit.ui.widgets.race_list import RaceList
from growcockpit.ui.widgets.steady_table import SteadyTable

REFRESH_S = 2.0
NOTES_WIDTH = 32  # the notes column: tags, then the note, cut
STATUS_STYLE = {
    "live": "bold green",
    "paused": "bold yellow",
    "completed": "cyan",
    "stopped": "yellow",
    "crashed": "bold red",
    "unknown": "dim",
}
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
or with `growcockpit tag RUN a,b` and `growcockpit note RUN "text"`."""


def _short(path: Path) -> str:
    """Relative to the working directory when inside it (short, and stable in snapshots)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


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
        self.runs: list[RunEntry] = []
        self._runs_key: tuple[object, ...] | None = None

    def compose(self) -> ComposeResult:
        yield Static(
            "growcockpit · design, launch, watch and steer growing-transformer runs",
            id="home-title",
        )
        with Vertical(id="home-body"):
            yield SteadyTable[str | Text](id="plans-table", cursor_type="row", zebra_stripes=True)
            yield SteadyTable[str | Text](id="runs-table", cursor_type="row", zebra_stripes=True)
            yield RaceList(self.runs_root.parent / RACES_DIR)  # shown once there are races
        yield Footer(compact=True)

    def on_mount(self) -> None:
        plans = self.query_one("#plans-table", DataTable)
        plans.border_title = "plans · Enter opens · n new"
        for col in ("plan", "from", "stages", "steps", "layers", "about"):
            plans.add_column(col, key=col)
        runs = self.query_one("#runs-table", DataTable)
        runs.border_title = (
            f"runs in {_short(self.runs_root)}/ · Enter or a attaches · c compares · g grows"
        )
        for col in ("run", "status", "plan", "stage", "step", "loss", "age", "notes"):
            runs.add_column(col, key=col)
        self.load_plans()
        self.show_runs(list_runs(self.runs_root))
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
        for i, p in enumerate(self.plans):
            about = p.problem or p.description
            table.add_row(
                Text(p.name, style="bold"),
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
        runs = list_runs(self.runs_root)
        self.app.call_from_thread(self.show_runs, runs)

    def action_refresh(self) -> None:
        self._refresh_worker()

    def show_runs(self, runs: list[RunEntry]) -> None:
        now = self._now()
        key = tuple(
            (
                r.path,
                r.status,
                r.stage_text(now),
                r.step,
                r.loss,
                format_age(now - r.updated),
                r.notes,
            )
            for r in runs
        )
        if key == self._runs_key:
            return
        self._runs_key = key
        self.runs = runs
        table = self.query_one("#runs-table", DataTable)
        cursor = table.cursor_row
        table.clear()
        if not runs:
            table.add_row(
                Text("no runs yet: open a plan and launch it (l)", style="dim"),
                *([""] * 7),
            )
            return
        for i, r in enumerate(runs):
            steps = f"{r.step}/{r.total_steps}" if r.total_steps else str(r.step)
            table.add_row(
                r.name,
                Text(r.status, style=STATUS_STYLE.get(r.status, "")),
                r.plan,
                r.stage_text(now),
                steps,
                "–" if r.loss is None else f"{r.loss:.3f}",
                format_age(now - r.updated) if r.updated else "–",
                Text(r.notes.summary(NOTES_WIDTH), style="italic"),
                key=str(i),
            )
        table.move_cursor(row=min(cursor, len(runs) - 1), animate=False)

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
