"""A plot of one logged scalar beside the loss (LR, total grad norm, update ratio, step
time, tokens/s), on the loss plot's x axis and zoom; the dashboard's `v` cycles which,
then hides it. What it draws comes from `growcockpit.session.scalar_view`."""

from __future__ import annotations

from textual.reactive import reactive

from growcockpit.session.plot_view import Curves
from growcockpit.session.run_state import RunState
from growcockpit.session.scalar_view import BY_KEY, ScalarKey, scalar_curves
from growcockpit.ui.widgets.loss_plot import MARKER_LEGEND, AxisPlot

LR_LEGEND = "[$gc-new]│[/]warm-up end [$gc-val-line]│[/]decay"


class ScalarPlot(AxisPlot):
    """Hidden until a scalar is chosen (`scalar` None: nothing to show)."""

    scalar: reactive[ScalarKey | None] = reactive(None)

    def watch_scalar(self, scalar: ScalarKey | None) -> None:
        self.set_class(scalar is not None, "-shown")
        if self.parent is not None:  # a narrow screen halves the loss plot to fit both
            self.parent.set_class(scalar is not None, "-with-scalar")
        self._settings_changed()

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
