"""Grad norms of every layer over time as ONE layers × time heatmap, grouped by stage.

Rows are layers (layer 0 at the bottom); two layers share a character cell
(upper/lower half block) so 48 layers fit in 24 rows, and more are bucketed.
Columns are time buckets (about one per character, from `LayerHistory.grid`),
never straddling a stage change; a marker row on top labels the stages and a
`│` column marks each stage change. Colour: log10 of the grad norm, scaled
to the range seen; a layer that does not train (frozen, or not there yet) is
blank. The dashboard's `/` filter keeps the rows of the layers it matches, as the
layer table does (`grad norm`, the plot's own name, keeps them all); the colour
range is then that of the kept layers, so the ones asked for are told apart.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from rich.console import RenderableType
from rich.text import Text
from textual import events
from textual.widget import Widget

from growcockpit.session.run_state import RunState
from growcockpit.session.view_filter import ViewFilter, shown_layers
from growcockpit.ui.widgets.text_bits import blend, colour

LABEL_W = 4  # "L47 "
MARKER_GLYPH = {"pause": "‖", "lr": "λ", "grow": "▲", "rollback": "↶"}
MARKER_VARS = {"pause": "gc-pause", "lr": "gc-lr", "grow": "gc-grow", "rollback": "gc-pause"}
SERIES = "grad norm"  # the name the `/` filter matches to keep every layer


def stage_labels(
    display: list[int], stages: list[int], names: dict[int, str]
) -> tuple[list[str], list[str]]:
    """The label row's characters (`N:name` at each stage's first column, `│` before a
    separator's) and the legend: `N name` of each stage whose name does not fit its columns.

    A name is shown whole or not at all (then just its number, and whole in the legend):
    never cut to a prefix such as `1:shallo`.
    """
    line = [" "] * len(display)
    legend: list[str] = []
    for pos, ci in enumerate(display):
        if not (ci == -1 or (pos == 0 and ci >= 0)):
            continue
        if ci == -1 and pos + 1 >= len(display):
            continue
        g = stages[display[pos + 1]] if ci == -1 else stages[ci]
        end = next((j for j in range(pos + 1, len(display)) if display[j] == -1), len(display))
        bar = "│" if ci == -1 else ""
        label = f"{bar}{g + 1}:{names.get(g, '')}" if names.get(g) else f"{bar}{g + 1}"
        if len(label) > end - pos:
            label = f"{bar}{g + 1}"[: end - pos]
            if names.get(g):
                legend.append(f"{g + 1} {names[g]}")
        for j, ch in enumerate(label):
            line[pos + j] = ch
    return line, legend


class LayerHeatmap(Widget):
    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self._key: tuple[object, ...] = ()
        self._state: RunState | None = None
        self._text: Text = Text("waiting for layer stats")
        self.columns_drawn = 0
        self.rows_drawn = 0
        self.layers_drawn: list[int] = []  # the layers whose rows the last draw kept
        self.view_filter = ViewFilter()  # the dashboard's `/`: rows it does not match go

    def set_filter(self, view_filter: ViewFilter) -> None:
        self.view_filter = view_filter

    def on_resize(self, event: events.Resize) -> None:
        """Redraw for the new size now, from the last state shown."""
        self._key = ()
        if self._state is not None:
            self.show_state(self._state)

    def render(self) -> RenderableType:
        return self._text

    def show_state(self, state: RunState) -> bool:
        self._state = state
        w, h = self.content_region.width, self.content_region.height
        key = (state.heat.version, len(state.layers), w, h, self.app.theme, self.view_filter)
        if key == self._key or w <= LABEL_W + 2 or h < 3:
            return False
        self._key = key
        self._text = self.draw(state, w, h)
        self.refresh()
        return True

    def draw(self, state: RunState, width: int, height: int) -> Text:
        n_layers = max([len(state.layers)] + [max(c) + 1 for c in state.heat.columns[-1:] if c])
        ids = shown_layers(state, self.view_filter, n_layers, SERIES)
        self.layers_drawn = ids
        self.border_subtitle = self.view_filter.describe(len(ids), n_layers)
        plot_w = width - LABEL_W
        steps, stages, cols = state.heat.grid(plot_w)
        if not cols or n_layers == 0:
            return Text("waiting for layer stats", style="dim")
        if not ids:
            return Text(f"no layer matches /{self.view_filter.text}/; Esc clears", style="bold")
        kept = set(ids)
        # display columns: a separator at each stage change, data columns stretched to fill
        boundary = [i > 0 and stages[i] != stages[i - 1] for i in range(len(cols))]
        n_sep = sum(boundary)
        rep = max(1, (plot_w - n_sep) // len(cols))
        display: list[int] = []  # -1: stage separator, else a column index
        for i in range(len(cols)):
            if boundary[i]:
                display.append(-1)
            display.extend([i] * rep)
        display = display[-plot_w:]  # too many (stage cuts add columns): keep the latest
        rows_avail = max(1, height - 2)  # one line of stage labels, one of steps
        every_id = not self.view_filter.active  # unfiltered: ids past the last column count too
        values = [v for c in cols for k, v in c.items() if v > 0 and (every_id or k in kept)]
        lo = math.log10(min(values)) if values else 0.0
        hi = math.log10(max(values)) if values else 1.0
        span = max(hi - lo, 1e-9)
        low, high = colour(self, "gc-heat-low"), colour(self, "gc-heat-high")
        stage_c = colour(self, "gc-stage")
        blank = colour(self, "background")

        def cell(col: dict[int, float], layers: Sequence[int]) -> str:
            vals = [col[i] for i in layers if col.get(i, 0.0) > 0]
            if not vals:
                return blank
            return blend(low, high, (math.log10(max(vals)) - lo) / span)

        text = Text()
        # stage labels, then other markers (grow, pause, LR change) where there is room
        chars, legend = stage_labels(display, stages, {s.index: s.name for s in state.stages})
        label_line = [(ch, f"bold {stage_c}" if ch != " " else "") for ch in chars]
        if legend:  # names too long for their stage's columns: named on a line above, whole
            rows_avail = max(1, rows_avail - 1)
            line = "  ".join(legend)
            if len(line) > width - LABEL_W:
                line = line[: max(0, width - LABEL_W - 1)] + "…"
            text.append(" " * LABEL_W + line + "\n", style=f"bold {stage_c}")
        first_pos = {ci: pos for pos, ci in reversed(list(enumerate(display)))}
        for m in state.markers:
            if m.kind not in MARKER_GLYPH or m.step < steps[0]:
                continue
            at = first_pos.get(bisect.bisect_right(steps, m.step) - 1)
            if at is not None and label_line[at][0] == " ":
                label_line[at] = (MARKER_GLYPH[m.kind], colour(self, MARKER_VARS[m.kind]))
        text.append(" " * LABEL_W)
        for ch, style in label_line:
            text.append(ch, style=style)
        text.append("\n")
        rows: list[tuple[tuple[int, ...], tuple[int, ...], str]] = []
        if len(ids) <= rows_avail:
            # roomy: whole character rows per layer (up to 3), top layer first
            per = min(3, rows_avail // len(ids))
            for lid in reversed(ids):
                rows += [((lid,), (lid,), f"L{lid}" if k == 0 else "") for k in range(per)]
        else:
            # two layer groups per row (upper/lower half block); groups of `per_half` layers
            per_half = max(1, math.ceil(len(ids) / (2 * rows_avail)))
            halves = math.ceil(len(ids) / per_half)
            for r in range(math.ceil(halves / 2) - 1, -1, -1):
                lower = tuple(ids[2 * r * per_half : (2 * r + 1) * per_half])
                upper = tuple(ids[(2 * r + 1) * per_half : (2 * r + 2) * per_half])
                every = max(1, math.ceil(halves / 2) // 8)
                rows.append((lower, upper, f"L{lower[0]}" if r % every == 0 else ""))
        self.columns_drawn, self.rows_drawn = len(cols), len(rows)
        col_cache: dict[tuple[int, tuple[int, ...]], str] = {}
        for lower, upper, label in rows:
            text.append(f"{label:<{LABEL_W}}"[:LABEL_W], style="dim")
            for ci in display:
                if ci == -1:
                    text.append("│", style=stage_c)
                    continue
                key_l = (ci, lower)
                lo_c = col_cache.get(key_l) or col_cache.setdefault(key_l, cell(cols[ci], lower))
                if upper == lower:
                    text.append("█", style=lo_c)
                else:
                    up_c = cell(cols[ci], upper) if upper else blank
                    text.append("▀", style=f"{up_c} on {lo_c}")
            text.append("\n")
        footer = f"step {steps[0]}"
        tail = f"{steps[-1]}  log₁₀ grad {lo:.1f}…{hi:.1f}"
        pad = max(1, len(display) - len(footer) - len(tail))
        text.append(" " * LABEL_W + footer + " " * pad + tail, style="dim")
        return text
