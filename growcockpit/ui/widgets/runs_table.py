"""Home's table of runs: the built-in columns, the user's extra ones (plan keys, tags),
an arrow on the sorted column's header. A click on a header asks its screen to sort
by it (`SortClicked`); what to show comes from `growcockpit.session.run_columns`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from growcockpit.session.catalog import format_age
from growcockpit.session.run_columns import (
    BUILTIN,
    RunFilter,
    RunRow,
    SortSpec,
    cell_text,
    table_rows,
)
from growcockpit.ui.widgets.steady_table import SteadyTable

NOTES_WIDTH = 32  # the notes column: tags, then the note, cut
STATUS_STYLE = {
    "live": "bold green",
    "paused": "bold yellow",
    "completed": "cyan",
    "stopped": "yellow",
    "crashed": "bold red",
    "unknown": "dim",
}
Cell = str | Text


def _builtin_cells(row: RunRow, now: float) -> list[Cell]:
    r = row.entry
    steps = f"{r.step}/{r.total_steps}" if r.total_steps else str(r.step)
    return [
        r.name,
        Text(r.status, style=STATUS_STYLE.get(r.status, "")),
        r.plan,
        r.stage_text(now),
        steps,
        "–" if r.loss is None else f"{r.loss:.3f}",
        format_age(now - r.updated) if r.updated else "–",
        Text(r.notes.summary(NOTES_WIDTH), style="italic"),
    ]


@dataclass(frozen=True)
class RunsView:
    """What the table draws: the rows shown (filtered, sorted) as cells, and a key that
    changes only when the drawing would. Plain data, so Home's worker thread builds it
    for each refresh and the event loop only draws it when it changed."""

    rows: list[RunRow]
    cells: list[list[Cell]]
    columns: tuple[str, ...]
    sort: SortSpec | None
    only: RunFilter
    any_runs: bool
    plain: tuple[tuple[str, ...], ...]  # the cells' text

    @property
    def key(self) -> object:
        return (self.columns, self.sort, self.only, self.any_runs, self.plain)


def runs_view(
    rows: Sequence[RunRow],
    columns: tuple[str, ...],
    sort: SortSpec | None,
    only: RunFilter,
    now: float,
) -> RunsView:
    """The view of `rows` with these settings (pure: safe in a worker thread)."""
    shown = table_rows(rows, columns, sort, only, now)
    cells = [_cells(r, columns, now) for r in shown]
    plain = tuple(tuple(str(c) for c in row) for row in cells)
    return RunsView(shown, cells, columns, sort, only, bool(rows), plain)


def _same_shape(a: RunsView, b: RunsView) -> bool:
    """The same columns and as many rows: the table can be patched cell by cell."""
    return (a.columns, a.sort, a.only) == (b.columns, b.sort, b.only) and (
        len(a.plain) == len(b.plain) > 0 and bool(a.cells) and bool(b.cells)
    )


def _cells(row: RunRow, columns: tuple[str, ...], now: float) -> list[Cell]:
    builtin = _builtin_cells(row, now)
    extra: list[Cell] = [cell_text(row, c, now) for c in columns]
    return [*builtin[:-1], *extra, builtin[-1]]


class RunsTable(SteadyTable[Cell]):
    """The runs, one a row; `draw` draws only what changed since it last drew."""

    class SortClicked(Message):
        def __init__(self, column: str) -> None:
            super().__init__()
            self.column = column

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._header: tuple[tuple[str, ...], SortSpec | None] | None = None
        self._drawn: RunsView | None = None

    def column_order(self) -> tuple[str, ...]:
        """The columns as shown: the built-in ones, the extra ones before the notes."""
        extra = self._header[0] if self._header else ()
        return (*BUILTIN[:-1], *extra, BUILTIN[-1])

    def _set_header(self, columns: tuple[str, ...], sort: SortSpec | None) -> None:
        if self._header == (columns, sort):
            return
        self._header = (columns, sort)
        self.clear(columns=True)
        for name in self.column_order():
            arrow = f" {sort.text().split()[-1]}" if sort and sort.column == name else ""
            self.add_column(f"{name}{arrow}", key=name)

    def draw(self, view: RunsView) -> bool:
        """Draw `view` (rows already filtered, sorted and made cells); True when it redrew."""
        drawn = self._drawn
        if drawn is not None and view.key == drawn.key:
            return False
        self._drawn = view
        if drawn is not None and _same_shape(drawn, view):
            self._patch(drawn, view)
            return True
        self._set_header(view.columns, view.sort)
        cursor = self.cursor_row
        self.clear()
        if not view.cells:
            why = (
                f"no run matches {view.only.text()} (/ changes the filter, Esc clears it)"
                if view.any_runs
                else "no runs yet: open a plan and launch it (l)"
            )
            self.add_row(Text(why, style="dim"), *([""] * (len(BUILTIN) + len(view.columns) - 1)))
            return True
        for i, row_cells in enumerate(view.cells):
            self.add_row(*row_cells, key=str(i))
        self.move_cursor(row=min(cursor, len(view.cells) - 1), animate=False)
        return True

    def _patch(self, drawn: RunsView, view: RunsView) -> None:
        """Only the cells that changed (an age ticking over, a live run's step): a full
        rebuild makes the table measure every cell again on the event loop, a fraction
        of a second for hundreds of runs."""
        order = self.column_order()
        for i, (old, new) in enumerate(zip(drawn.plain, view.plain, strict=True)):
            for j, (a, b) in enumerate(zip(old, new, strict=True)):
                if a != b:
                    self.update_cell(str(i), order[j], view.cells[i][j], update_width=True)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        if event.column_key.value is not None:
            self.post_message(self.SortClicked(event.column_key.value))
