"""Loss curve (train: EMA-smoothed or raw; val) with vertical markers at stage changes,
grows, pauses, LR changes and rollbacks."""

from __future__ import annotations

from textual import events
from textual.reactive import reactive
from textual_plotext import PlotextPlot

from growcockpit.session.run_state import Marker, RunState
from growcockpit.ui.widgets.text_bits import colour, rgb

MARKER_VARS = {
    "stage": "gc-stage",
    "grow": "gc-grow",
    "pause": "gc-pause",
    "resume": "gc-pause",
    "lr": "gc-lr",
    "rollback": "gc-pause",
}
MARKER_LEGEND = "[$gc-stage]│[/]stage [$gc-grow]│[/]grow [$gc-pause]│[/]pause [$gc-lr]│[/]lr"


def draw_markers(plot: PlotextPlot, markers: list[Marker], lo: float, hi: float) -> None:
    """Vertical lines for markers inside [lo, hi] (x = step)."""
    for marker in markers:
        if lo <= marker.step <= hi:
            plot.plt.vline(marker.step, rgb(colour(plot, MARKER_VARS.get(marker.kind, "primary"))))


class LossPlot(PlotextPlot):
    """Redrawn by its screen at most twice a second, and only when the data changed.

    Series are downsampled to about twice the plot width (min/max buckets).
    `raw` switches the train curve between the EMA-smoothed and the raw loss.
    """

    raw: reactive[bool] = reactive(False)

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self._key: tuple[object, ...] = ()
        self._state: RunState | None = None
        self.points_plotted = 0

    def on_resize(self, event: events.Resize) -> None:
        """Re-downsample for the new width now: plotext would otherwise stretch stale points."""
        self._key = ()
        if self._state is not None:
            self.show_state(self._state)

    def watch_raw(self) -> None:
        self._key = ()

    def show_state(self, state: RunState) -> bool:
        """Replot if the plot data, width, mode or theme changed; True if it replotted."""
        self._state = state
        width = max(10, self.size.width)
        key = (state.plot_version, width, self.raw, self.app.theme)
        if key == self._key:
            return False
        self._key = key
        max_points = 2 * width
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.xlabel("step")
        series = state.train_loss if self.raw else state.ema
        tx, ty = series.downsampled(max_points)
        vx, vy = state.val.downsampled(max_points)
        self.points_plotted = len(tx) + len(vx)
        label = "train (raw)" if self.raw else "train (EMA)"
        if tx:
            plt.plot(
                tx, ty, label=label, marker="braille", color=rgb(colour(self, "gc-train-line"))
            )
        if vx:
            plt.plot(vx, vy, label="val", marker="braille", color=rgb(colour(self, "gc-val-line")))
        if tx or vx:
            xs = tx + vx
            draw_markers(self, list(state.markers), min(xs), max(xs))
        else:
            plt.title("waiting for the first step")
        self.refresh()
        return True
