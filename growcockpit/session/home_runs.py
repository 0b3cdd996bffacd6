"""Home's run table as a plain object: it reads the catalog (with each run's plan keys)
and remembers the user's columns and sort order in the cockpit's settings.json.

Why an object without Textual: the screen only composes and draws; reading a few
hundred run directories happens here, called from the screen's worker thread, and
the choice of columns and sort outlives the session (as the theme does) because
it is how the user reads their runs, not a property of any one run.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from growcockpit.session.catalog import list_runs
from growcockpit.session.plan_keys import PlanKeys
from growcockpit.session.run_columns import (
    BUILTIN,
    RunFilter,
    RunRow,
    SortSpec,
    parse_columns,
    table_rows,
)
from growcockpit.session.settings import load_settings, save_settings

SETTINGS_KEY = "home_runs"


def _remembered(raw: Any) -> tuple[tuple[str, ...], SortSpec | None]:
    """Columns and sort from settings.json; anything unreadable there is ignored."""
    if not isinstance(raw, dict):
        return (), None
    columns: tuple[str, ...] = ()
    if isinstance(raw.get("columns"), list):
        try:
            columns = parse_columns(" ".join(str(c) for c in raw["columns"]))
        except ValueError:
            columns = ()
    sort = None
    key = raw.get("sort")
    if isinstance(key, str) and (key in BUILTIN or key in columns):
        sort = SortSpec(key, raw.get("descending") is True)
    return columns, sort


class HomeRuns:
    """The runs under `runs_root` and how Home shows them (columns, sort, filter)."""

    def __init__(self, runs_root: Path, settings: Path | None = None) -> None:
        self.runs_root = Path(runs_root)
        self._settings = settings
        self._plans = PlanKeys()
        self.columns, self.sort = _remembered(load_settings(settings).get(SETTINGS_KEY))
        self.only = RunFilter()

    def read(self) -> list[RunRow]:
        """Every run with its plan keys (disk I/O: call it from a worker)."""
        return [RunRow(e, self._plans.of(e.path)) for e in list_runs(self.runs_root)]

    def count_at_most(self, limit: int) -> bool:
        """Whether there are at most `limit` entries under the runs folder (no file is
        read: a first look that says whether reading them all can wait for a worker)."""
        try:
            with os.scandir(self.runs_root) as entries:
                return sum(1 for _ in itertools.islice(entries, limit + 1)) <= limit
        except OSError:
            return True

    def shown(self, rows: Sequence[RunRow], now: float) -> list[RunRow]:
        """The rows the table shows, filtered and sorted."""
        return table_rows(rows, self.columns, self.sort, self.only, now)

    def set_columns(self, columns: tuple[str, ...]) -> bool:
        """Show these extra columns (a sort by one that goes, goes too); False when the
        choice could not be saved (it then lasts this session)."""
        self.columns = columns
        if self.sort is not None and self.sort.column not in (*BUILTIN, *columns):
            self.sort = None
        return self._save()

    def set_sort(self, sort: SortSpec | None) -> bool:
        self.sort = sort
        return self._save()

    def _save(self) -> bool:
        value: dict[str, object] = {"columns": list(self.columns)}
        if self.sort is not None:
            value |= {"sort": self.sort.column, "descending": self.sort.descending}
        return save_settings({SETTINGS_KEY: value}, self._settings)
