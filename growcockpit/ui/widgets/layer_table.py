"""One row per transformer layer: role, latest grad norm, weight norm, update ratio."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from growcockpit.ui.run_state import LayerRow, RunState

COLUMNS = ("layer", "state", "grad norm", "weight norm", "upd ratio")
ROLE_STYLE = {
    "frozen": "dim",
    "trainable": "green",
    "trainable (new)": "bold green",
    "frozen (new)": "yellow",
}


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def layer_cells(row: LayerRow) -> tuple[Text | str, ...]:
    role = row.role
    return (
        str(row.id),
        Text(role, style=ROLE_STYLE.get(role, "")),
        _num(row.grad_norm),
        _num(row.weight_norm),
        _num(row.update_ratio),
    )


class LayerTable(DataTable[Text | str]):
    """Rows appear when the model grows; cells update in place."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id, cursor_type="none", zebra_stripes=True)
        for label in COLUMNS:
            self.add_column(label, key=label)
        self._rows: dict[int, tuple[str, ...]] = {}

    def show_state(self, state: RunState) -> None:
        rows = state.layer_rows()
        ids = {r.id for r in rows}
        for gone in [lid for lid in self._rows if lid not in ids]:
            self.remove_row(str(gone))
            del self._rows[gone]
        new_ids = [r.id for r in rows if r.id not in self._rows]
        if self._rows and new_ids and min(new_ids) < max(self._rows):
            self.clear()  # a layer arrived below existing ones: rebuild in id order
            self._rows.clear()
        for row in rows:
            cells = layer_cells(row)
            plain = tuple(str(c) for c in cells)
            old = self._rows.get(row.id)
            if old is None:
                self.add_row(*cells, key=str(row.id))
            elif old != plain:
                for label, cell, before, now in zip(COLUMNS, cells, old, plain, strict=True):
                    if before != now:
                        self.update_cell(str(row.id), label, cell)
            self._rows[row.id] = plain

    def roles(self) -> dict[int, str]:
        """Layer id -> role as displayed (for tests and scripts)."""
        return {lid: cells[1] for lid, cells in self._rows.items()}
