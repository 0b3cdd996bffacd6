"""Home's list of races (`races/` beside `runs/`): a table that keeps itself fresh.

Its own widget so that Home only places it: it reads the race directories in a thread
worker every couple of seconds (a race's study and its runs' logs are files to fold)
and asks for a race to be opened with a message, as Home's run list does.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.text import Text
from textual import work
from textual.message import Message
from textual.widgets import DataTable

from growcockpit.session.catalog import format_age
from growcockpit.session.race_view import RaceEntry, list_races
from growcockpit.ui.type_ahead import hold_keys
from growcockpit.ui.widgets.steady_table import SteadyTable

REFRESH_S = 2.0
STATUS_STYLE = {
    "live": "bold green",
    "stopping": "bold yellow",
    "stopped": "yellow",
    "picked": "cyan",
    "finished": "cyan",
    "unfinished": "dim",
    "unreadable": "bold red",
}
COLUMNS = ("race", "status", "candidates", "rungs", "leader", "age")


class RaceList(SteadyTable[str | Text]):
    """The races under `root`, live ones first; Enter posts `OpenRace`. Hidden (and not
    focusable) while there are none."""

    DEFAULT_CSS = """
    RaceList { height: auto; max-height: 10; border: round $primary;
               border-title-color: $text-muted; }
    """

    class OpenRace(Message):
        def __init__(self, path: Path) -> None:
            super().__init__()
            self.path = path

    def __init__(self, root: Path) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id="races-table")
        self.root = Path(root)
        self.races: list[RaceEntry] = []
        self._key: tuple[object, ...] | None = None

    def on_mount(self) -> None:
        self.border_title = f"races in {self.root}/ · Enter opens"
        for col in COLUMNS:
            self.add_column(col, key=col)
        self.display = False  # until the first read (in the worker) finds races
        self.refresh_races()
        self.set_interval(REFRESH_S, self.refresh_races)

    def refresh_races(self) -> None:
        self._refresh_worker()

    @work(thread=True, exclusive=True, group="races", exit_on_error=False)
    def _refresh_worker(self) -> None:
        races = list_races(self.root)
        self.app.call_from_thread(self.show_races, races)

    def show_races(self, races: list[RaceEntry]) -> None:
        now = time.time()
        key = tuple(
            (r.path, r.status, r.rungs, r.leader, format_age(now - r.updated)) for r in races
        )
        if key == self._key:
            return
        self._key = key
        self.races = races
        cursor = self.cursor_row
        self.clear()
        self.display = bool(races)  # Home shows no empty race list to those who never race
        if not races:
            return
        for i, r in enumerate(races):
            self.add_row(
                r.path.name,
                Text(r.status, style=STATUS_STYLE.get(r.status, "")),
                str(r.candidates),
                r.rungs,
                r.leader or "–",
                format_age(now - r.updated) if r.updated else "–",
                key=str(i),
            )
        self.move_cursor(row=min(cursor, len(races) - 1), animate=False)

    def selected(self) -> RaceEntry | None:
        if not self.races:
            return None
        return self.races[min(self.cursor_row, len(self.races) - 1)]

    def open_selected(self) -> bool:
        """Post `OpenRace` for the highlighted race; False when there is none."""
        race = self.selected()
        if race is None:
            return False
        hold_keys(self.app)  # the keys typed until the race screen is up go to it
        self.post_message(self.OpenRace(race.path))
        return True

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.open_selected()
