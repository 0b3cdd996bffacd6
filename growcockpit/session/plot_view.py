"""What the dashboard's plots draw, without Textual: curves on the chosen x axis, zoomed,
smoothed and downsampled to the plot's width.

A plot's settings are a `PlotView` (x axis, zoom, smoothing factor, raw). The series
the folds keep are indexed by step; the other axes go through the run's cumulative
maps (`fold/axes.py`). Smoothing (TWEMA) runs over the whole curve on the chosen
axis, before zooming, so zooming in shows the same curve in more detail and never
re-starts the average at the window's edge; then each curve is clipped to the window
and min/max-downsampled to about twice the plot's width.

The dashboard's `/` filter (`view_filter.py`) keeps the series whose name it matches
(`train/loss`, `val/loss`, `tokens/s`); `Curves` says which it left out, so a plot
whose every series is filtered out says so instead of drawing an empty frame.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace

from growcockpit.session.fold.axes import AXES, Axis, axis_map, convert, has_axis
from growcockpit.session.fold.series import Series, minmax_downsample
from growcockpit.session.fold.state import RunData
from growcockpit.session.smoothing import DEFAULT_FACTOR, step_factor, twema
from growcockpit.session.view_filter import ViewFilter

MAX_ZOOM = 12  # the window's smallest share of the x range: 1 / 2**MAX_ZOOM
AXIS_NAMES: dict[Axis, str] = {
    "step": "step",
    "tokens": "tokens",
    "time": "training time",
    "flops": "estimated FLOPs",
}
TOKEN_UNITS = (("G tokens", 1e9), ("M tokens", 1e6), ("k tokens", 1e3))
TIME_UNITS = (("training h", 7200.0, 3600.0), ("training min", 120.0, 60.0))
FLOP_UNITS = (("PFLOPs", 1e15), ("TFLOPs", 1e12), ("GFLOPs", 1e9), ("MFLOPs", 1e6))
LOSS_SERIES = {"train": "train/loss", "val": "val/loss"}  # curve -> the name a filter matches
PINNED_SERIES = "baseline/val/loss"  # a pinned baseline's curve, by the same rule


def axis_unit(axis: Axis, top: float) -> tuple[str, float]:
    """(x label, divisor) for an axis whose largest value is `top`: tokens in k/M/G,
    training time in s, min or h, FLOPs in the largest unit `top` reaches."""
    if axis == "tokens":
        return next(((n, s) for n, s in TOKEN_UNITS if top >= s), ("tokens", 1.0))
    if axis == "time":
        return next(((n, s) for n, above, s in TIME_UNITS if top >= above), ("training s", 1.0))
    if axis == "flops":
        name, scale = next(((n, s) for n, s in FLOP_UNITS if top >= s), FLOP_UNITS[-1])
        return f"estimated {name}", scale
    return "step", 1.0


@dataclass(frozen=True)
class PlotView:
    """One plot's settings; the keys make new ones (frozen, so a plot can key its cache on it)."""

    axis: Axis = "step"
    zoom: int = 0  # the window shows the last 1 / 2**zoom of the x range
    factor: float = DEFAULT_FACTOR  # TWEMA smoothing of the train loss
    raw: bool = False
    only: ViewFilter = ViewFilter()  # the dashboard's `/`: the series whose names it matches
    steps: tuple[int, int] | None = None  # `z`: only steps A-B (plot_range.py), over `zoom`

    def zoomed(self, by: int) -> PlotView:
        return replace(self, zoom=min(MAX_ZOOM, max(0, self.zoom + by)))

    def smoother(self, direction: int) -> PlotView:
        return replace(self, factor=step_factor(self.factor, direction))

    def smoothing_text(self) -> str:
        return "raw" if self.raw or self.factor <= 0 else f"TWEMA {self.factor:g}"

    def axis_text(self) -> str:
        zoom = f" · zoom ×{2**self.zoom}" if self.zoom else ""
        if self.steps is not None:
            zoom = f" · steps {self.steps[0]}-{self.steps[1]}"
        return f"x: {AXIS_NAMES[self.axis]}{zoom}"


def next_axis(state: RunData, axis: Axis) -> Axis:
    """The next axis after `axis` that the run's log can draw (step always can)."""
    i = AXES.index(axis)
    for k in range(1, len(AXES) + 1):
        candidate = AXES[(i + k) % len(AXES)]
        if has_axis(state, candidate):
            return candidate
    return "step"


@dataclass
class Curve:
    xs: list[float]
    ys: list[float]


@dataclass
class Curves:
    """What a plot draws: curves by name, marker x positions and kinds, the x label."""

    curves: dict[str, Curve]
    markers: list[tuple[float, str]]
    xlabel: str
    span: tuple[float, float] | None = None  # the window shown, in the label's unit
    series: tuple[str, ...] = ()  # the names of the series the filter kept (drawn or empty)
    left_out: tuple[str, ...] = ()  # the names of those it did not match
    scale: float = 1.0  # the x label's unit: a value on the axis / scale is what is drawn

    @property
    def points(self) -> int:
        return sum(len(c.xs) for c in self.curves.values())

    def filter_text(self, only: ViewFilter) -> str:
        """`/pattern/ · 1 of 2` for a border while a filter is on, else ""."""
        return only.describe(len(self.series), len(self.series) + len(self.left_out))

    def empty_text(self, only: ViewFilter) -> str:
        """Why nothing is drawn: no series matches the filter, or none has a point yet."""
        if only.active and not self.series:
            names = ", ".join(self.left_out)
            return f"no series matches /{only.text}/ (of {names}); Esc clears"
        if only.active:
            return f"no points yet in {', '.join(self.series)}"
        return "waiting for the first step"


def to_axis(state: RunData, axis: Axis, steps: Sequence[float]) -> list[float]:
    """Step x values on `axis` (the step axis: as they are)."""
    series = axis_map(state, axis)
    return list(steps) if series is None else convert(steps, series.xs, series.ys)


def window_start(first: float, last: float, zoom: int) -> float | None:
    """Where a window showing the last 1 / 2**zoom of [first, last] begins (None: all)."""
    if zoom <= 0 or last <= first:
        return None
    return last - (last - first) / 2.0**zoom


def shape(
    raw: dict[str, tuple[list[float], list[float]]],
    marks: list[tuple[float, str]],
    axis: Axis,
    zoom: int,
    max_points: int,
    window: tuple[float, float] | None = None,
) -> Curves:
    """Curves already on `axis` (ascending x): the window (`window` on the axis, else the
    zoom's latest part), downsampling and the unit."""
    xs_all = [x for xs, _ in raw.values() for x in xs[:1] + xs[-1:]]
    if not xs_all:
        return Curves({}, [], axis_unit(axis, 0.0)[0])
    first, last = min(xs_all), max(xs_all)
    lo = window_start(first, last, zoom) if window is None else window[0]
    hi = last if window is None else window[1]
    label, scale = axis_unit(axis, last)
    curves: dict[str, Curve] = {}
    for name, (xs, ys) in raw.items():
        start = bisect_left(xs, lo) if lo is not None else 0
        stop = bisect_right(xs, hi)
        dx, dy = minmax_downsample(xs[start:stop], ys[start:stop], max_points)
        if dx:
            curves[name] = Curve([x / scale for x in dx], dy)
    low = first if lo is None else lo
    markers = [(x / scale, kind) for x, kind in marks if low <= x <= hi]
    return Curves(curves, markers, label, (low / scale, hi / scale), scale=scale)


def step_window(state: RunData, view: PlotView) -> tuple[float, float] | None:
    """The view's step range on its axis (None: no range set)."""
    if view.steps is None:
        return None
    lo, hi = to_axis(state, view.axis, [float(view.steps[0]), float(view.steps[1])])
    return lo, hi


def loss_curves(
    state: RunData,
    view: PlotView,
    max_points: int,
    pinned: tuple[list[float], list[float]] | None = None,
) -> Curves:
    """The train loss (TWEMA-smoothed on the axis, or raw) and the val loss, with markers;
    only those the view's filter matches are computed. `pinned`: a pinned baseline's val
    loss already on the view's axis (session/pinned_baseline.py), drawn as `baseline`."""
    names = LOSS_SERIES if pinned is None else {**LOSS_SERIES, "baseline": PINNED_SERIES}
    keep = [k for k, name in names.items() if view.only.matches(name)]
    raw: dict[str, tuple[list[float], list[float]]] = {}
    if "train" in keep:
        tx = to_axis(state, view.axis, state.train_loss.xs)
        ty = state.train_loss.ys if view.raw else twema(tx, state.train_loss.ys, view.factor)
        raw["train"] = (tx, list(ty))
    if "val" in keep:
        raw["val"] = (to_axis(state, view.axis, state.val.xs), list(state.val.ys))
    if "baseline" in keep and pinned is not None:
        raw["baseline"] = pinned
    window = step_window(state, view)
    shown = shape(raw, _markers(state, view.axis), view.axis, view.zoom, max_points, window)
    return _named(shown, [names[k] for k in keep], list(names.values()))


def series_curve(
    state: RunData,
    series: Series,
    name: str,
    view: PlotView,
    n: int,
    extra_marks: Sequence[tuple[int, str]] = (),
) -> Curves:
    """One step-indexed series (tokens/s) on the view's axis and zoom, unsmoothed; none
    when the view's filter does not match its name. `extra_marks`: (step, kind) lines
    this plot draws besides the run's markers (the LR's schedule phases)."""
    raw: dict[str, tuple[list[float], list[float]]] = {}
    if view.only.matches(name):
        raw[name] = (to_axis(state, view.axis, series.xs), list(series.ys))
    extra_xs = to_axis(state, view.axis, [float(step) for step, _ in extra_marks])
    extra = [(x, kind) for x, (_, kind) in zip(extra_xs, extra_marks, strict=True)]
    marks = _markers(state, view.axis) + extra
    shown = shape(raw, marks, view.axis, view.zoom, n, step_window(state, view))
    return _named(shown, list(raw), [name])


def _named(shown: Curves, kept: list[str], every: list[str]) -> Curves:
    left_out = tuple(name for name in every if name not in kept)
    return replace(shown, series=tuple(kept), left_out=left_out)


def _markers(state: RunData, axis: Axis) -> list[tuple[float, str]]:
    marks = list(state.markers)
    xs = to_axis(state, axis, [float(m.step) for m in marks])
    return [(x, m.kind) for x, m in zip(xs, marks, strict=True)]
