"""One row per transformer layer: state (trainable / frozen / new), health (ok, starved:
trains with barely any gradient, moved: frozen but its weights changed; see
protocol/layer_health.py), grad norm with a sparkline of its recent history, update
ratio ‖Δθ‖/‖θ‖, and forward and backward milliseconds as the median of the last timing
samples (n: how many)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets.data_table import ColumnKey

from growcockpit.protocol.layer_health import MOVED, OK, STARVED
from growcockpit.session.fold.layers import LayerRow
from growcockpit.session.run_state import RunState
from growcockpit.session.view_filter import ViewFilter, layer_verdicts
from growcockpit.ui.widgets.steady_table import SteadyTable
from growcockpit.ui.widgets.text_bits import colour, num, spark

COLUMNS = ("layer", "state", "health", "grad norm", "trend", "Δθ/θ", "fwd ms", "bwd ms", "n")
STATE_VARS = {"trainable": "gc-trainable", "frozen": "gc-frozen", "new": "gc-new"}
HEALTH_STYLES = {OK: "dim", STARVED: "bold $warning", MOVED: "bold $error"}
SPARK_WIDTH = 12  # the trend's most; it shrinks (to MIN_SPARK) so that every column shows
MIN_SPARK = 3


class LayerTable(SteadyTable[Text | str]):
    """Rows appear when the model grows; cells update in place, only when they change."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id, cursor_type="none", zebra_stripes=True)
        for label in COLUMNS:
            self.add_column(label, key=label)
        self._rows: dict[int, tuple[str, ...]] = {}
        self._theme = ""
        self._spark = SPARK_WIDTH
        self.view_filter = ViewFilter()  # the dashboard's `/`: rows it does not match are left out

    def layer_cells(self, row: LayerRow, verdict: str = OK) -> tuple[Text | str, ...]:
        state = row.state
        style = colour(self, STATE_VARS[state])
        if state == "frozen":
            style = f"{style}"
        elif state == "new":
            style = f"bold {style}"
        trend = spark(row.grad_hist, self._spark, log=True) if row.trainable else ""
        return (
            str(row.id),
            Text(state, style=style),
            Text(verdict, style=self._health_style(verdict)),
            num(row.grad_norm),
            Text(trend, style=colour(self, STATE_VARS[state])),
            num(row.update_ratio, ".1e"),
            num(row.fwd_ms, ".2f"),
            num(row.bwd_ms, ".2f"),
            str(row.timing_samples) if row.timing_samples else "–",
        )

    def _health_style(self, verdict: str) -> str:
        style = HEALTH_STYLES.get(verdict, "")
        if "$" in style:
            bold, var = style.split(" $")
            return f"{bold} {colour(self, var)}"
        return style

    def _fit_trend(self) -> None:
        """The trend gets what the other columns leave of the table's width (a filled
        sparkline pushed `bwd ms` and `n` out of a 62-column table); below MIN_SPARK the
        table scrolls sideways instead."""
        width = self.scrollable_content_region.width
        if width <= 0:
            return  # hidden: keep the last fit
        pad = 2 * self.cell_padding
        others = sum(c.content_width + pad for k, c in self.columns.items() if k.value != "trend")
        fit = max(MIN_SPARK, min(SPARK_WIDTH, width - others - pad))
        if fit != self._spark:
            self._spark = fit
            self.columns[ColumnKey("trend")].content_width = fit  # the label is cut to it
            self._rows.clear()
            self.clear()

    def show_state(self, state: RunState) -> None:
        if self.app.theme != self._theme:  # colours live in the cells: rebuild on a theme change
            self._theme = self.app.theme
            self.clear()
            self._rows.clear()
        self._fit_trend()
        rows = state.layer_rows()
        verdicts = layer_verdicts(state)
        total = len(rows)
        rows = [
            r for r in rows if self.view_filter.matches_layer(r.id, r.state, verdicts.get(r.id, OK))
        ]
        self.border_subtitle = self.view_filter.describe(len(rows), total)
        ids = {r.id for r in rows}
        for gone in [lid for lid in self._rows if lid not in ids]:
            self.remove_row(str(gone))
            del self._rows[gone]
        new_ids = [r.id for r in rows if r.id not in self._rows]
        if self._rows and new_ids and min(new_ids) < max(self._rows):
            self.clear()  # a layer arrived below existing ones: rebuild in id order
            self._rows.clear()
        for row in rows:
            cells = self.layer_cells(row, verdicts.get(row.id, OK))
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
