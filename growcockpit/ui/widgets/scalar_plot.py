"""A plot of one logged scalar beside the loss (LR, total grad norm, update ratio, step
time, tokens/s), on the loss plot's x axis and zoom; the dashboard's `v` cycles which,
then hides it. What it draws comes from `growcockpit.session.scalar_view`.

Where the overview is too short for both plots (80×24: the loss got 3 rows, its legend
over the curve) this one yields: hidden, and a one-line hint says why and what shows it."""

from __future__ import annotations

from textual.reactive import reactive
from textual.widgets import Static

from growcockpit.session.plot_view import Curves
from growcockpit.session.run_state import RunState
from growcockpit.session.scalar_view import BY_KEY, ScalarKey, scalar_curves
from growcockpit.ui.widgets.loss_plot import MARKER_LEGEND, AxisPlot

LR_LEGEND = "[$gc-new]│[/]warm-up end [$gc-val-line]│[/]decay"
LOSS_MIN_ROWS = 12  # the loss plot's least usable height (7 rows of curve), as at 80 wide
SCALAR_ROWS = 8  # this plot's least (3 rows of curve)
TAB_BAR_ROWS = 2  # the tab names and their underline


def plots_room(tabs_rows: int, bottom_rows: int) -> int:
    """Rows the overview gives its plots: the tabbed area less its bar and what sits
    below the plots on screen (the events row when wide; 0 when narrow, where it scrolls)."""
    return tabs_rows - TAB_BAR_ROWS - bottom_rows


def squeezed(room: int) -> bool:
    """Too short for the loss and this plot both at a usable height."""
    return room < LOSS_MIN_ROWS + SCALAR_ROWS


def yield_hint(name: str, room: int) -> str:
    """The line shown where the plot would be."""
    more = LOSS_MIN_ROWS + SCALAR_ROWS - room
    return f"{name} plot hidden: the terminal needs {more} more rows for two plots · v: next"


class ScalarHint(Static):
    """Says that the plot beside the loss yielded its rows to the loss, and why."""


class ScalarPlot(AxisPlot):
    """Hidden until a scalar is chosen (`scalar` None: nothing to show), and while the
    screen is too short for two plots (`squeezed`: the loss keeps a usable height)."""

    scalar: reactive[ScalarKey | None] = reactive(None)
    squeezed: reactive[bool] = reactive(False)

    def watch_scalar(self, scalar: ScalarKey | None) -> None:
        self._place()
        self._settings_changed()

    def watch_squeezed(self, squeezed: bool) -> None:
        self._place()

    @property
    def in_view(self) -> bool:
        return self.scalar is not None and not self.squeezed

    def _place(self) -> None:
        self.set_class(self.in_view, "-shown")
        if self.parent is not None:
            self.parent.set_class(self.in_view, "-with-scalar")

    def title_text(self) -> str:
        if self.scalar is None:
            return ""
        legend = f"{MARKER_LEGEND} {LR_LEGEND}" if self.scalar == "lr" else MARKER_LEGEND
        return f"{BY_KEY[self.scalar].name} · {self.view.axis_text()}  {legend}"

    def curves(self, state: RunState, max_points: int) -> Curves:
        if self.scalar is None:
            return Curves({}, [], "step")
        return scalar_curves(state, self.scalar, self.view, max_points)

    def style(self, name: str) -> tuple[str, str]:
        return name, "gc-lr" if self.scalar == "lr" else "gc-train-line"

    def extra_key(self) -> object:
        return self.scalar
