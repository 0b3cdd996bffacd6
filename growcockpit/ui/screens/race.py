"""A race: its candidates as a live table, their validation curves overlaid against
compute and against training time with the rungs marked, cut candidates greyed and the
leader starred; `s` stops the race, `c` continues its winner to the full budget.

What it draws comes from growcockpit.session.race_view, read in a thread worker every
couple of seconds; stopping and continuing are files and a detached process there, so
the race goes on (or stays stopped) when the cockpit closes.
"""

from __future__ import annotations

import math
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual_plotext import PlotextPlot

from growcockpit.session.race_view import (
    CandidateView,
    RaceReadError,
    RaceView,
    continue_race,
    continue_text,
    load_race_view,
    stop_race,
)
from growcockpit.ui.screens.confirm import ConfirmScreen
from growcockpit.ui.screens.prompt import HelpScreen, keys_of
from growcockpit.ui.widgets.steady_table import SteadyTable
from growcockpit.ui.widgets.text_bits import RUN_COLOURS, rgb

REFRESH_S = 2.0
COLOURS = RUN_COLOURS  # readable on every theme (ANSI "white" vanished on the light one)
CUT_COLOUR = "#7a7a7a"  # grey, 3:1 or more on every theme's ground
LEADER = "★ "
STATE_STYLE = {"racing": "", "cut": "dim", "winner": "bold green", "finished": "bold cyan",
               "failed": "bold red", "stopping": "yellow", "stopped": "yellow"}  # fmt: skip
PLOTS = (("#race-flops", "flops", "val loss vs estimated FLOPs · vertical lines: the rungs"),
         ("#race-time", "wall", "val loss vs training time"))  # fmt: skip
HELP = """\
A race trains every candidate for a short prefix of its budget and, rung by rung,
keeps the best half on validation loss at equal compute (the FLOPs of the plan's
cost model); the last rung picks the winner, which goes on to the full budget.

The table has each candidate's loss at every rung, the compute it used and where it
was cut (cut candidates are grey, the leader starred). The plots overlay the
candidates' curves (their first seed) against compute, with the rungs as vertical
lines, and against training time. s asks the race to stop (the run in training
checkpoints; nothing is lost); c goes on with it in the background: the rungs still
missing, then the winner to the full budget. r reads the race directory again now (it
is re-read every 2 s anyway); Esc goes back.

The verdict says how much sooner the winner reaches the baseline's final loss, compute
against compute ("3.00× sooner"). Then it counts the race itself: the baseline's compute
to that loss over everything the race trained to find the winner (every other
candidate's compute, plus the winner's way to that loss). Below 1× (say 0.34×) the
search cost more than the winner saved, here about 2.9× the baseline's compute: the race
pays off only when the winning plan is trained again."""


def colour_of(i: int, c: CandidateView) -> str:
    return CUT_COLOUR if c.is_cut else COLOURS[i % len(COLOURS)]


def _loss(v: float | None) -> str:
    return "—" if v is None else f"{v:.4f}"


def state_text(c: CandidateView) -> Text:
    words = f"cut at rung {c.cut_at + 1}" if c.cut_at is not None else c.state
    if c.final_loss is not None:
        words += f", final {c.final_loss:.4f}"
    return Text(words, style=STATE_STYLE.get(c.state, ""))


def name_text(i: int, c: CandidateView) -> Text:
    tags = (" (baseline)" if c.baseline else "") + (" (control)" if c.control else "")
    style = (
        "dim" if c.is_cut else f"bold {COLOURS[i % len(COLOURS)]}" if c.leader else colour_of(i, c)
    )
    return Text((LEADER if c.leader else "  ") + c.key + tags, style=style)


def header_text(v: RaceView) -> str:
    head = (
        f"race {v.name} · {v.status} · rung {min(v.rungs_done + 1, len(v.rungs))}/{len(v.rungs)}"
        if v.rungs_done < len(v.rungs)
        else f"race {v.name} · {v.status} · all {len(v.rungs)} rungs done"
    )
    head += f" · leader {v.leader}" if v.leader else ""
    lines = [head, *v.verdict]
    if v.caveat:
        lines.append(v.caveat)
    return "\n".join(lines)


class RaceScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("c", "continue_winner", "Continue the winner"),
        Binding("s", "stop_race", "Stop the race"),
        Binding("r", "refresh", "Refresh", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]
    DEFAULT_CSS = """
    #race-head { height: auto; padding: 0 1; background: $panel; }
    #race-table { height: auto; max-height: 40%; border: round $primary;
                  border-title-color: $text-muted; }
    #race-plots { height: 1fr; }
    #race-flops, #race-time { height: 1fr; border: round $primary;
                              border-title-color: $text-muted; }
    """

    class Loaded(Message):
        def __init__(self, view: RaceView | None, problem: str = "") -> None:
            super().__init__()
            self.view = view
            self.problem = problem

    def __init__(self, race_dir: Path) -> None:
        super().__init__()
        self.race_dir = Path(race_dir)
        self.view: RaceView | None = None

    def compose(self) -> ComposeResult:
        yield Static(f"race {self.race_dir.name} · reading…", id="race-head", markup=False)
        yield SteadyTable[str | Text](id="race-table", cursor_type="row", zebra_stripes=True)
        with Vertical(id="race-plots"):
            for wid, _, _ in PLOTS:
                yield PlotextPlot(id=wid[1:])
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#race-table").border_title = "candidates · ★ leader · grey: cut"
        for wid, _, title in PLOTS:
            self.query_one(wid).border_title = title
        self.action_refresh()
        self.set_interval(REFRESH_S, self.action_refresh)

    # ---- data -------------------------------------------------------------------
    def action_refresh(self) -> None:
        self._load_worker()

    @work(thread=True, exclusive=True, group="race", exit_on_error=False)
    def _load_worker(self) -> None:
        try:
            self.post_message(self.Loaded(load_race_view(self.race_dir)))
        except RaceReadError as exc:
            self.post_message(self.Loaded(None, str(exc)))

    def on_race_screen_loaded(self, message: Loaded) -> None:
        if message.view is None:
            self.query_one("#race-head", Static).update(message.problem)
            return
        self.view = message.view
        self.query_one("#race-head", Static).update(header_text(message.view))
        self._table(message.view)
        self._plots(message.view)

    def _table(self, v: RaceView) -> None:
        table = self.query_one("#race-table", DataTable)
        if len(table.columns) != len(v.rungs) + 3:
            table.clear(columns=True)
            for col in ["candidate", *[f"rung {i + 1}" for i in range(len(v.rungs))]]:
                table.add_column(col, key=col)
            table.add_column("FLOPs", key="flops")
            table.add_column("state", key="state")
        cursor = table.cursor_row
        table.clear()
        for i, c in enumerate(v.candidates):
            dim = "dim" if c.is_cut else ""
            table.add_row(
                name_text(i, c),
                *[Text(_loss(x), style=dim) for x in c.rung_losses],
                Text(f"{c.flops:.3g}", style=dim),
                state_text(c),
                key=c.key,
            )
        if v.candidates:
            table.move_cursor(row=min(cursor, len(v.candidates) - 1), animate=False)

    def _plots(self, v: RaceView) -> None:
        top = max((p.flops for c in v.candidates for p in c.curve), default=0.0)
        top = max([top, *v.rungs])
        exp = int(math.floor(math.log10(top))) if top > 0 else 0
        scale = 10.0**exp
        for wid, axis, _ in PLOTS:
            plt = self.query_one(wid, PlotextPlot).plt
            plt.clear_data()
            plt.clear_figure()
            plt.xlabel(f"FLOPs ×1e{exp}" if axis == "flops" else "training seconds")
            drawn = False
            # cut candidates first, so the ones still racing are drawn over them
            order = sorted(enumerate(v.candidates), key=lambda ic: not ic[1].is_cut)
            for i, c in order:
                if not c.curve:
                    continue
                drawn = True
                xs = [p.flops / scale if axis == "flops" else p.wall_s for p in c.curve]
                label = (LEADER if c.leader else "") + c.key[-24:]
                plt.plot(xs, [p.loss for p in c.curve], label=label, marker="braille",
                         color=rgb(colour_of(i, c)))  # fmt: skip
            if axis == "flops":
                for rung in v.rungs:
                    plt.vline(rung / scale, "gray")
            if not drawn:
                plt.title("no candidate has evaluated yet")
            self.query_one(wid, PlotextPlot).refresh()

    # ---- keys -------------------------------------------------------------------
    def action_stop_race(self) -> None:
        v = self.view
        if v is None or not v.can_stop:
            why = "it is already stopping" if v and v.status == "stopping" else "no worker is in it"
            self.notify(f"Nothing to stop: {why}.", title="Stop the race")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._stop_worker()

        self.app.push_screen(
            ConfirmScreen(
                "Stop the race?",
                "The run in training stops with a checkpoint and the race's workers leave. "
                "c (or growcockpit race --race-dir DIR) goes on where it stopped.",
                yes="Stop",
            ),
            answered,
        )

    @work(thread=True, exclusive=True, group="race-cmd", exit_on_error=False)
    def _stop_worker(self) -> None:
        stop_race(self.race_dir)
        self.app.call_from_thread(self.notify, "Stop asked; the race stops at its next check.")
        self.app.call_from_thread(self.action_refresh)

    def action_continue_winner(self) -> None:
        v = self.view
        if v is None:
            return
        if not v.can_continue:
            why = {
                "live": "the race is running (s stops it)",
                "stopping": "the race is stopping; press c once it has",
                "finished": "the winner has trained its full budget",
            }.get(v.status, v.status)
            self.notify(f"Nothing to continue: {why}.", title="Continue the winner")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._continue_worker()

        self.app.push_screen(
            ConfirmScreen("Continue the race?", continue_text(v), yes="Continue"), answered
        )

    @work(thread=True, exclusive=True, group="race-cmd", exit_on_error=False)
    def _continue_worker(self) -> None:
        try:
            log = continue_race(self.race_dir)
        except OSError as exc:
            self.app.call_from_thread(
                self.notify, f"cannot start the race: {exc}", severity="error"
            )
            return
        self.app.call_from_thread(
            self.notify, f"the race goes on in the background (log: {log})", title="Continuing"
        )
        self.app.call_from_thread(self.action_refresh)

    def action_back(self) -> None:
        self.dismiss(None)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Race", HELP, keys_of(self)))
