"""Loss curve with vertical markers at stage changes, grows and pauses."""

from __future__ import annotations

from textual import events
from textual_plotext import PlotextPlot

from growcockpit.ui.run_state import RunState

MARKER_COLORS = {"stage": "cyan", "grow": "green", "pause": "red", "resume": "yellow"}


class LossPlot(PlotextPlot):
    """Redrawn by its screen at most twice a second, and only when the data changed.

    Series are downsampled to about twice the plot width (min/max buckets).
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self._version = -1
        self._width = -1
        self.points_plotted = 0

    def on_resize(self, event: events.Resize) -> None:
        self._version = -1  # re-downsample for the new width on the next flush

    def show_state(self, state: RunState) -> bool:
        """Replot if the state's plot data or our width changed; True if it replotted."""
        width = max(10, self.size.width)
        if state.plot_version == self._version and width == self._width:
            return False
        self._version = state.plot_version
        self._width = width
        max_points = 2 * width
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.xlabel("step")
        tx, ty = state.train_loss.downsampled(max_points)
        vx, vy = state.val.downsampled(max_points)
        self.points_plotted = len(tx) + len(vx)
        if tx:
            plt.plot(tx, ty, label="train", marker="braille", color="blue")
        if vx:
            plt.plot(vx, vy, label="val", marker="braille", color="magenta")
        if tx or vx:
            for marker in state.markers:
                plt.vline(marker.step, MARKER_COLORS.get(marker.kind, "white"))
        else:
            plt.title("waiting for the first step")
        self.refresh()
        return True
