"""Grad norms of every layer over time as ONE layers × time heatmap, grouped by stage.

Rows are layers (layer 0 at the bottom); two layers share a character cell
(upper/lower half block) so 48 layers fit in 24 rows, and more are bucketed.
Columns are time buckets (about one per character, from `LayerHistory.grid`),
never straddling a stage change; a marker row on top labels the stages and a
`│` column marks each stage change. Colour: log10 of the grad norm, scaled
to the range seen; a layer that does not train (frozen, or not there yet) is
blank.
"""

from __future__ import annotations

import bisect
import math

from rich.console import RenderableType
from rich.text import Text
from textual import events
from textual.widget import Widget

from growcockpit.ui.run_state import RunState
from growcockpit.ui.widgets.text_bits import blend, colour

LABEL_W = 4  # "L47 "
MARKER_GLYPH = {"pause": "‖", "lr": "λ", "grow": "▲"}
MARKER_VARS = {"pause": "gc-pause", "lr": "gc-lr", "grow": "gc-grow"}


class LayerHeatmap(Widget):
    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self._key: tuple[object, ...] = ()
        self._text: Text = Text("waiting for layer stats")
        self.columns_drawn = 0
        self.rows_drawn = 0

    def on_resize(self, event: events.Resize) -> None:
        self._key = ()

    def render(self) -> RenderableType:
        return self._text

    def show_state(self, state: RunState) -> bool:
        w, h = self.content_region.width, self.content_region.height
        key = (state.heat.version, len(state.layers), w, h, self.app.theme)
        if key == self._key or w <= LABEL_W + 2 or h < 3:
            return False
        self._key = key
        self._text = self.draw(state, w, h)
        self.refresh()
        return True

    def draw(self, state: RunState, width: int, height: int) -> Text:
        n_layers = max([len(state.layers)] + [max(c) + 1 for c in state.heat.columns[-1:] if c])
        plot_w = width - LABEL_W
        steps, stages, cols = state.heat.grid(plot_w)
        if not cols or n_layers == 0:
            return Text("waiting for layer stats", style="dim")
        if len(cols) > plot_w:  # stage cuts can add a few columns: drop the oldest
            steps, stages, cols = steps[-plot_w:], stages[-plot_w:], cols[-plot_w:]
        rows_avail = max(1, height - 2)  # one line of stage labels, one of steps
        per_cell = max(1, math.ceil(n_layers / (2 * rows_avail)))  # layers per half cell
        halves = math.ceil(n_layers / per_cell)
        n_rows = math.ceil(halves / 2)
        self.columns_drawn, self.rows_drawn = len(cols), n_rows
        values = [v for c in cols for v in c.values() if v > 0]
        lo = math.log10(min(values)) if values else 0.0
        hi = math.log10(max(values)) if values else 1.0
        span = max(hi - lo, 1e-9)
        low, high = colour(self, "gc-heat-low"), colour(self, "gc-heat-high")
        stage_c = colour(self, "gc-stage")
        blank = colour(self, "background") if self.app.theme_variables else "#000000"

        def cell(col: dict[int, float], half: int) -> str:
            ids = range(half * per_cell, min(n_layers, (half + 1) * per_cell))
            vals = [col[i] for i in ids if i in col and col[i] > 0]
            if not vals:
                return blank
            return blend(low, high, (math.log10(max(vals)) - lo) / span)

        boundary = [i > 0 and stages[i] != stages[i - 1] for i in range(len(cols))]
        text = Text()
        # stage labels, then other markers (pause, LR change) where there is room
        label_line: list[tuple[str, str]] = [(" ", "")] * len(cols)
        names = {s.index: s.name for s in state.stages}
        for i, g in enumerate(stages):
            if i == 0 or boundary[i]:
                name = f"{g + 1}:{names.get(g, '')}"
                for j, ch in enumerate(name):
                    if i + j >= len(cols) or (j > 0 and boundary[i + j]):
                        break
                    label_line[i + j] = (ch, f"bold {stage_c}")
        for m in state.markers:
            if m.kind not in MARKER_GLYPH or not steps or m.step < steps[0]:
                continue
            i = bisect.bisect_right(steps, m.step) - 1
            if label_line[i][0] == " ":
                label_line[i] = (MARKER_GLYPH[m.kind], colour(self, MARKER_VARS[m.kind]))
        text.append(" " * LABEL_W)
        for ch, style in label_line:
            text.append(ch, style=style)
        text.append("\n")
        for r in range(n_rows - 1, -1, -1):
            top_half, bottom_half = 2 * r + 1, 2 * r
            first_layer = bottom_half * per_cell
            label = f"L{first_layer}" if r % max(1, n_rows // 6 or 1) == 0 or r == n_rows - 1 else ""
            text.append(f"{label:<{LABEL_W}}"[:LABEL_W], style="dim")
            for i, col in enumerate(cols):
                if boundary[i]:
                    text.append("│", style=stage_c)
                    continue
                upper = cell(col, top_half) if top_half < halves else blank
                lower = cell(col, bottom_half)
                text.append("▀", style=f"{upper} on {lower}")
            text.append("\n")
        first, last = steps[0], steps[-1]
        footer = f"step {first}"
        tail = f"{last}  log₁₀ grad {lo:.1f}…{hi:.1f}"
        pad = max(1, len(cols) - len(footer) - len(tail))
        text.append(" " * LABEL_W + footer + " " * pad + tail, style="dim")
        return text
