"""A DataTable whose columns are wide enough for a cell from the moment it goes in."""

from __future__ import annotations

from typing import TypeVar

from rich.text import Text, TextType
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

CellT = TypeVar("CellT")


def cell_width(cell: object) -> int:
    """Terminal cells the widest line of `cell` takes; a `str` is markup, as DataTable reads it."""
    text = cell if isinstance(cell, Text) else Text.from_markup(str(cell))
    return max((line.cell_len for line in text.split()), default=0)


class SteadyTable(DataTable[CellT]):
    """Textual widens a column on the table's next idle, but caches drawn lines under an
    update counter that the widening does not move. A frame drawn in between (a busy
    machine draws one) keeps the old width until some later change: a designer cell read
    "top:2: 2" for "top:2: 2-3". Widening before the cell goes in makes any frame right."""

    def _widen(self, column_key: ColumnKey | str, cell: object) -> None:
        column = self.columns.get(ColumnKey(str(column_key)))
        if column is not None:
            column.content_width = max(column.content_width, cell_width(cell))

    def add_row(
        self,
        *cells: CellT,
        height: int | None = 1,
        key: str | None = None,
        label: TextType | None = None,
    ) -> RowKey:
        for column_key, cell in zip(self.columns, cells, strict=False):
            self._widen(column_key, cell)
        return super().add_row(*cells, height=height, key=key, label=label)

    def update_cell(
        self,
        row_key: RowKey | str,
        column_key: ColumnKey | str,
        value: CellT,
        *,
        update_width: bool = False,
    ) -> None:
        if update_width:
            self._widen(column_key, value)
        super().update_cell(row_key, column_key, value, update_width=update_width)
