"""The dashboard's view keys over its plots and lists: smoothing, x axis, zoom, a step
range, the cursor, the plot beside the loss, the `/` filter.

Functions over the widgets under a node (the dashboard screen), each returning what the
screen tells the user; the screen redraws and remembers the view. No state of their
own: a key's effect lives in the widgets' reactives (`AxisPlot.axis`, `.zoom`, ...), the
state the dashboard remembers per run (dashboard_memory.py).
"""

from __future__ import annotations

from textual.dom import DOMNode

from growcockpit.session.plot_range import move_cursor, range_text
from growcockpit.session.plot_view import next_axis
from growcockpit.session.run_state import RunState
from growcockpit.session.scalar_view import BY_KEY, next_scalar
from growcockpit.session.view_filter import ViewFilter
from growcockpit.ui.widgets.filtered_log import FilteredLog
from growcockpit.ui.widgets.heatmap import LayerHeatmap
from growcockpit.ui.widgets.layer_table import LayerTable
from growcockpit.ui.widgets.loss_plot import LossPlot, axis_plots
from growcockpit.ui.widgets.scalar_plot import (
    ScalarHint,
    ScalarPlot,
    plots_room,
    squeezed,
    yield_hint,
)

FILTER_BODY = (
    "A regular expression over the layer tables and the heatmap (layer index, 'layer N', "
    "state, health), the event logs, the console and the plotted series (train/loss, "
    "val/loss, tokens/s, grad norm); case-insensitive unless it has a capital. "
    "Empty or Esc shows everything."
)

RANGE_BODY = (
    "Two steps, as 30-40: every plot shows only those, on its x axis; , and . then move "
    "a cursor whose values each plot gives in its lower border. Empty: the whole run."
)


def toggle_raw(node: DOMNode) -> str:
    """`r`: the loss raw or smoothed."""
    plot = node.query_one(LossPlot)
    plot.raw = not plot.raw
    return f"loss: {plot.view.smoothing_text()}"


def smoothing(node: DOMNode, direction: int) -> str:
    """`<` / `>`: less or more smoothing of the loss (smoothed again if it was raw)."""
    plot = node.query_one(LossPlot)
    plot.raw, plot.factor = False, plot.view.smoother(direction).factor
    return f"loss: {plot.view.smoothing_text()}"


def cycle_axis(node: DOMNode, state: RunState) -> str:
    """`x`: every plot to the next x axis the run's log can draw (step, tokens, time,
    FLOPs). Called with the state's lock held."""
    axis = next_axis(state, node.query_one(LossPlot).axis)
    for plot in axis_plots(node):
        plot.axis = axis
    return node.query_one(LossPlot).view.axis_text()


def zoom(node: DOMNode, by: int) -> None:
    """[ halves the window (the latest half of the x range), ] doubles it, 0 shows all
    (a step range and the cursor go too)."""
    for plot in axis_plots(node):
        plot.zoom = plot.view.zoomed(by).zoom if by else 0
        if not by:
            plot.steps, plot.cursor = None, None


def cycle_scalar(node: DOMNode) -> None:
    """`v`: the plot beside the loss to the next scalar (LR, grad norm, update ratio, step
    time, tokens/s), then hidden. The screen fits it (`fit_scalar`), then tells it."""
    plot = node.query_one(ScalarPlot)
    plot.scalar = next_scalar(plot.scalar)


def scalar_shown(node: DOMNode) -> str:
    """What `v` shows now, said after the plot was fitted to the terminal."""
    plot = node.query_one(ScalarPlot)
    shown = "hidden" if plot.scalar is None else BY_KEY[plot.scalar].name
    if plot.scalar is not None and plot.squeezed:
        shown += " (hidden while the terminal is this short)"
    return f"plot beside the loss: {shown}"


def fit_scalar(node: DOMNode, tabs_rows: int, below: int) -> None:
    """Hide the plot beside the loss, with a hint, where two plots leave the loss too
    few rows to read (80×24); show it again when the terminal grows. `tabs_rows`: the
    tabs' height; `below`: the rows of the events row under the plots, when wide."""
    plot, hint = node.query_one(ScalarPlot), node.query_one(ScalarHint)
    room = plots_room(tabs_rows, below)
    plot.squeezed = squeezed(room)
    hint.display = plot.scalar is not None and plot.squeezed
    if plot.scalar is not None:
        hint.update(yield_hint(BY_KEY[plot.scalar].name, room))


def set_step_range(node: DOMNode, steps: tuple[int, int] | None) -> str:
    """`z`: every plot to steps A-B (None: the whole run), the zoom and cursor reset."""
    for plot in axis_plots(node):
        plot.steps, plot.zoom, plot.cursor = steps, 0, None
    return f"steps {range_text(steps)}" if steps else "the whole run"


def step_range_text(node: DOMNode) -> str:
    """The range shown now, as the `z` prompt offers it."""
    return range_text(node.query_one(LossPlot).steps)


def step_cursor(node: DOMNode, state: RunState, by: int) -> None:
    """`,` / `.`: the cursor a step (1/40 of the range) left / right, on every plot.
    Called with the state's lock held."""
    loss = node.query_one(LossPlot)
    xs = state.train_loss.xs
    whole = (int(xs[0]), int(xs[-1])) if xs else (0, state.step)
    cursor = move_cursor(loss.cursor, loss.steps or whole, by)
    for plot in axis_plots(node):
        plot.cursor = cursor


def apply_filter(node: DOMNode, view_filter: ViewFilter) -> str:
    """`/`: narrow the layer tables, the logs, the plots' series and the heatmap's layers
    to what `view_filter` matches."""
    for table in node.query(LayerTable):
        table.view_filter = view_filter
    for log in node.query(FilteredLog):
        log.set_filter(view_filter)
    for plot in axis_plots(node):
        plot.set_filter(view_filter)
    for heatmap in node.query(LayerHeatmap):
        heatmap.set_filter(view_filter)
    return f"filter /{view_filter.text}/ (Esc clears)" if view_filter.active else "no filter"
