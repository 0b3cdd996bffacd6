"""Loss curve (train: TWEMA-smoothed or raw; val) on the chosen x axis (step, tokens,
training time, estimated FLOPs), zoomed, with vertical markers at stage changes, grows,
pauses, LR changes and rollbacks. What to draw comes from `growcockpit.session.plot_view`;
this module only draws it. The dashboard's `/` filter keeps the series it names; a plot
it leaves empty says so in the frame and counts what it kept in the border."""

from __future__ import annotations

from abc import abstractmethod

from rich.text import Text
from textual import events
from textual.dom import DOMNode
from textual.reactive import reactive
from textual.widgets import Static
from textual_plotext import PlotextPlot

from growcockpit.session.fold.axes import Axis
from growcockpit.session.pinned_baseline import PinnedBaseline, standing
from growcockpit.session.plot_range import nearest
from growcockpit.session.plot_view import Curves, PlotView, loss_curves, to_axis
from growcockpit.session.run_state import RunState
from growcockpit.session.smoothing import DEFAULT_FACTOR
from growcockpit.session.view_filter import ViewFilter
from growcockpit.ui.widgets.text_bits import colour, rgb

MARKER_VARS = {
    "stage": "gc-stage",
    "grow": "gc-grow",
    "pause": "gc-pause",
    "resume": "gc-pause",
    "lr": "gc-lr",
    "rollback": "gc-pause",
    "warmup": "gc-new",  # the LR plot's: a stage's warm-up ends here
    "decay": "gc-val-line",  # the LR plot's: a "wsd" schedule's decay begins here
}
MARKER_LEGEND = "[$gc-stage]│[/]stage [$gc-grow]│[/]grow [$gc-pause]│[/]pause [$gc-lr]│[/]lr"
BORDER_MARGIN = 8  # the corners, the title's gaps, room for the cursor's caption


def draw_markers(plot: PlotextPlot, markers: list[tuple[float, str]]) -> None:
    """Vertical lines at the markers' x (already on the plot's axis and inside its window)."""
    for x, kind in markers:
        plot.plt.vline(x, rgb(colour(plot, MARKER_VARS.get(kind, "primary"))))


class AxisPlot(PlotextPlot):
    """A plot of a run's state on a chosen x axis and zoom, redrawn by its screen at most
    twice a second and only when the data, size, settings or theme changed."""

    axis: reactive[Axis] = reactive("step")
    zoom: reactive[int] = reactive(0)
    steps: reactive[tuple[int, int] | None] = reactive(None)  # `z`: steps A-B only
    cursor: reactive[int | None] = reactive(None)  # `,` / `.`: a step whose values it gives
    TITLE = ""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self._key: tuple[object, ...] = ()
        self._state: RunState | None = None
        self.points_plotted = 0
        self.shown = Curves({}, [], "step")  # what the last replot drew
        self.view_filter = ViewFilter()  # the dashboard's `/`: series it does not match go

    @property
    def view(self) -> PlotView:
        return PlotView(self.axis, self.zoom, only=self.view_filter, steps=self.steps)

    def set_filter(self, view_filter: ViewFilter) -> None:
        """Keep only the series `view_filter` matches, from the next replot (the view keys it)."""
        self.view_filter = view_filter

    def on_resize(self, event: events.Resize) -> None:
        """Re-downsample for the new width now: plotext would otherwise stretch stale points."""
        self._key = ()
        if self._state is not None:
            self.show_state(self._state)

    def on_mount(self) -> None:
        self.border_title = self.title_text()

    def _settings_changed(self) -> None:
        self._key = ()
        self.border_title = self.title_text()

    watch_axis = watch_zoom = watch_steps = watch_cursor = _settings_changed

    def title_text(self) -> str:
        return f"{self.TITLE} · {self.view.axis_text()}  {MARKER_LEGEND}"

    @abstractmethod
    def curves(self, state: RunState, max_points: int) -> Curves:
        """Each plot's: the curves it draws from the state, at most `max_points` each."""

    def style(self, name: str) -> tuple[str, str]:
        """(legend label, theme colour variable) of a curve."""
        return name, "gc-train-line"

    def extra_key(self) -> object:
        """What else, besides the run's data and the view, changes the drawing."""
        return None

    def caption(self, state: RunState) -> str:
        """A line for the bottom border (next to the filter's count); "" for none."""
        return ""

    def show_state(self, state: RunState) -> bool:
        """Replot if the plot data, width, settings or theme changed; True if it replotted."""
        self._state = state
        width = max(10, self.size.width)
        key = (state.plot_version, width, self.view, self.cursor, self.app.theme, self.extra_key())
        if key == self._key:
            return False
        self._key = key
        shown = self.shown = self.curves(state, 2 * width)
        self.points_plotted = shown.points
        at = self._cursor_x(state)
        captions = (shown.filter_text(self.view_filter), self.caption(state), self._at(at))
        self.border_subtitle = " · ".join(c for c in captions if c)
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.xlabel(shown.xlabel)
        for name, curve in shown.curves.items():
            label, var = self.style(name)
            plt.plot(
                curve.xs, curve.ys, label=label, marker="braille", color=rgb(colour(self, var))
            )
        if shown.curves:
            draw_markers(self, shown.markers)
            if at is not None:
                plt.vline(at, rgb(colour(self, "foreground")))
        elif self.steps is not None and state.train_loss.xs:
            plt.title(f"no points in steps {self.steps[0]}-{self.steps[1]} (0 shows all)")
        else:
            plt.title(shown.empty_text(self.view_filter))
        self.refresh()
        return True

    def _cursor_x(self, state: RunState) -> float | None:
        """The cursor's x as drawn (on the axis, in the label's unit); None: no cursor."""
        if self.cursor is None:
            return None
        (x,) = to_axis(state, self.axis, [float(self.cursor)])
        return x / self.shown.scale

    def _at(self, x: float | None) -> str:
        """`step 35: train 3.91 · val 3.99` for the lower border: each curve's drawn point
        nearest to the cursor."""
        if x is None:
            return ""
        values = [(n, nearest(c.xs, c.ys, x)) for n, c in self.shown.curves.items()]
        shown = " · ".join(f"{self.style(n)[0]} {y:.4g}" for n, y in values if y is not None)
        return f"step {self.cursor}: {shown or 'no point'}"


def axis_plots(node: DOMNode) -> list[AxisPlot]:
    """The axis plots under `node` (AxisPlot is abstract, so a typed query cannot name it)."""
    return [plot for plot in node.query(PlotextPlot) if isinstance(plot, AxisPlot)]


class LossPlot(AxisPlot):
    """Train loss (TWEMA by default, `raw` for the raw values; the factor in the title)
    and validation loss; with a pinned baseline (`pin`), its validation loss too and,
    in the bottom border, where the run stands against it."""

    pinned: PinnedBaseline | None = None
    standing_below: str = ""  # where the run stands, when too long for the border

    def pin(self, pinned: PinnedBaseline | None) -> None:
        """Draw `pinned` from the next replot on (None: unpin); the screen replots."""
        self.pinned = pinned
        self._key = ()

    def extra_key(self) -> object:
        p = self.pinned
        return None if p is None else (p.path, p.mtime_ns, len(p.evals))

    def caption(self, state: RunState) -> str:
        """Where the run stands against the pinned baseline, in the border when it fits;
        a longer line ("not comparable (…): a different loss, no ratio") was cut there, so
        it goes to `standing_below` (the dashboard wraps it under the plot)."""
        line = "" if self.pinned is None else standing(self.pinned, state, self.axis)
        fits = len(line) <= self.size.width - BORDER_MARGIN
        self.standing_below = "" if fits else line
        return line if fits else ""

    raw: reactive[bool] = reactive(False)
    factor: reactive[float] = reactive(DEFAULT_FACTOR)
    TITLE = "loss"

    @property
    def view(self) -> PlotView:
        return PlotView(
            self.axis, self.zoom, self.factor, self.raw, self.view_filter, steps=self.steps
        )

    watch_raw = watch_factor = AxisPlot._settings_changed

    def title_text(self) -> str:
        return f"loss ({self.view.smoothing_text()}) · {self.view.axis_text()}  {MARKER_LEGEND}"

    def curves(self, state: RunState, max_points: int) -> Curves:
        pinned = self.pinned.curve(self.axis) if self.pinned is not None else None
        return loss_curves(state, self.view, max_points, pinned)

    def style(self, name: str) -> tuple[str, str]:
        if name == "val":
            return "val", "gc-val-line"
        if name == "baseline" and self.pinned is not None:
            return self.pinned.label(), "gc-frozen"
        return f"train ({self.view.smoothing_text()})", "gc-train-line"


class PinStanding(Static):
    """The loss plot's standing against its pinned baseline, wrapped, when too long for
    the plot's border; hidden otherwise."""

    def show(self, line: str) -> None:
        self.display = bool(line)
        self.update(Text(line))  # plain: plan values are not markup
