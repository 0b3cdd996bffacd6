"""One row per transformer layer: state (trainable / frozen / new), grad norm with a
sparkline of its recent history, update ratio ‖Δθ‖/‖θ‖, and forward and backward
milliseconds as the median of the last timing samples (n: how many)."""

from __future__ import annotations

from rich.text import Text

from growcockpit.ui.fold.layers import LayerRow
from growcockpit.ui.run_state import RunState
from growcockpit.ui.widgets.steady_table import SteadyTable
from growcockpit.ui.widgets.text_bits import colour, num, spark

COLUMNS = ("layer", "state", "grad norm", "trend", "Δθ/θ", "fwd ms", "bwd ms", "n")
STATE_VARS = {"trainable": "gc-trainable", "frozen": "gc-frozen", "new": "gc-new"}
SPARK_WIDTH = 12


class LayerTable(SteadyTable[Text | str]):
    """Rows appear when the model grows; cells update in place, only when they change."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id, cursor_type="none", zebra_stripes=True)
        for label in COLUMNS:
            self.add_column(label, key=label)
        self._rows: dict[int, tuple[str, ...]] = {}
        self._theme = ""

    def layer_cells(self, row: LayerRow) -> tuple[Text | str, ...]:
        state = row.state
        style = colour(self, STATE_VARS[state])
        if state == "frozen":
            style = f"{style}"
        elif state == "new":
            style = f"bold {style}"
        trend = spark(row.grad_hist, SPARK_WIDTH, log=True) if row.trainable else ""
        return (
            str(row.id),
            Text(state, style=style),
            num(row.grad_norm),
            Text(trend, style=colour(self, STATE_VARS[state])),
            num(row.update_ratio, ".1e"),
            num(row.fwd_ms, ".2f"),
            num(row.bwd_ms, ".2f"),
            str(row.timing_samples) if row.timing_samples else "–",
        )

    def show_state(self, state: RunState) -> None:
        if self.app.theme != self._theme:  # colours live in the cells: rebuild on a theme change
            self._theme = self.app.theme
            self.clear()
            self._rows.clear()
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
            cells = self.layer_cells(row)
            plain = tuple(str(c) for c in cells)
            old = self._rows.get(row.id)
            if old is None:
                self.add_row(*cells, key=str(row.id))
            elif old != plain:
                for label, cell, before, now in zip(COLUMNS, cells, old, plain, strict=True):
                    if before != now:
                        self.update_cell(str(row.id), label, cell, update_width=True)
            self._rows[row.id] = plain

    def roles(self) -> dict[int, str]:
        """Layer id -> role (trainable / frozen / new) as displayed, for tests and scripts."""
        return {lid: cells[1] for lid, cells in self._rows.items()}
