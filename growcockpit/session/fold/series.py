"""Bounded time series for plots: min/max-compacted (x, y) series, the layers × time
grad-norm history, and markers (vertical lines on time axes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def minmax_downsample(
    xs: Sequence[float], ys: Sequence[float], max_points: int
) -> tuple[list[float], list[float]]:
    """Reduce a series to at most `max_points` points, keeping each bucket's min and max.

    Points come back in x order, so spikes and dips survive even when a plot
    has far fewer columns than the series has points.
    """
    n = len(xs)
    if n <= max_points or max_points < 2:
        return list(xs), list(ys)
    buckets = max_points // 2
    out_x: list[float] = []
    out_y: list[float] = []
    for b in range(buckets):
        lo = b * n // buckets
        hi = (b + 1) * n // buckets
        if hi <= lo:
            continue
        seg = ys[lo:hi]  # C-level min/max and index: first occurrences, as with key=
        i_min = lo + seg.index(min(seg))
        i_max = lo + seg.index(max(seg))
        first, second = (i_min, i_max) if i_min <= i_max else (i_max, i_min)
        out_x.append(xs[first])
        out_y.append(ys[first])
        if second != first:
            out_x.append(xs[second])
            out_y.append(ys[second])
    return out_x, out_y


class Series:
    """An (x, y) series that compacts itself (min/max buckets) past `cap` points."""

    def __init__(self, cap: int = 20_000) -> None:
        self.cap = max(4, cap)
        self.xs: list[float] = []
        self.ys: list[float] = []

    def __len__(self) -> int:
        return len(self.xs)

    def append(self, x: float, y: float) -> None:
        if y is None or y != y:  # None or NaN: nothing to plot
            return
        xs = self.xs
        xs.append(x)
        self.ys.append(y)
        if len(xs) > self.cap:
            self.xs, self.ys = minmax_downsample(self.xs, self.ys, self.cap // 2)

    def extend(self, xs: list[float], ys: list[float]) -> None:
        """Append many points (none None or NaN), compacting at most once.

        Folding a long backlog this way costs one min/max pass instead of one
        per `cap / 2` points; the result is the same kind of compaction as
        appending one by one (every bucket's min and max), bucketed once.
        """
        self.xs.extend(xs)
        self.ys.extend(ys)
        if len(self.xs) > self.cap:
            self.xs, self.ys = minmax_downsample(self.xs, self.ys, self.cap // 2)

    def last(self) -> float | None:
        return self.ys[-1] if self.ys else None

    def drop_after(self, x: float) -> None:
        """Forget the points beyond `x` (a rollback abandoned them)."""
        keep = [i for i, xi in enumerate(self.xs) if xi <= x]
        if len(keep) < len(self.xs):
            self.xs = [self.xs[i] for i in keep]
            self.ys = [self.ys[i] for i in keep]

    def downsampled(self, max_points: int) -> tuple[list[float], list[float]]:
        return minmax_downsample(self.xs, self.ys, max_points)


@dataclass
class Marker:
    """A vertical line on time axes: a stage change, grow, pause, resume or LR change."""

    step: int
    kind: str  # stage | grow | pause | resume | lr | rollback
    label: str = ""
    t: float = 0.0  # seconds since the run started (for wall-time axes)


class LayerHistory:
    """Grad norms of every layer over time: one column per `layer_stats` event.

    Bounded: past `cap` columns, neighbouring pairs merge (keeping each layer's
    max, so spikes survive), so a million-step run keeps at most `cap` columns.
    `grid(width)` buckets the columns to a plot width for the heatmap.
    """

    def __init__(self, cap: int = 2048) -> None:
        self.cap = max(8, cap)
        self.steps: list[int] = []
        self.stages: list[int] = []
        self.columns: list[dict[int, float]] = []
        self.version = 0

    def __len__(self) -> int:
        return len(self.columns)

    def append(self, step: int, stage: int, values: dict[int, float]) -> None:
        self.steps.append(step)
        self.stages.append(stage)
        self.columns.append(values)
        self.version += 1
        if len(self.columns) > self.cap:
            self._halve()

    def drop_after(self, step: int) -> None:
        """Forget the columns beyond `step` (a rollback abandoned them)."""
        keep = [i for i, s in enumerate(self.steps) if s <= step]
        if len(keep) < len(self.steps):
            self.steps = [self.steps[i] for i in keep]
            self.stages = [self.stages[i] for i in keep]
            self.columns = [self.columns[i] for i in keep]
            self.version += 1

    def _halve(self) -> None:
        steps: list[int] = []
        stages: list[int] = []
        cols: list[dict[int, float]] = []
        for i in range(0, len(self.columns) - 1, 2):
            a, b = self.columns[i], self.columns[i + 1]
            if self.stages[i] != self.stages[i + 1]:
                # never merge across a stage change: keep the boundary sharp
                steps += [self.steps[i], self.steps[i + 1]]
                stages += [self.stages[i], self.stages[i + 1]]
                cols += [a, b]
                continue
            merged = dict(a)
            for k, v in b.items():
                merged[k] = max(merged.get(k, v), v)
            steps.append(self.steps[i])
            stages.append(self.stages[i])
            cols.append(merged)
        if len(self.columns) % 2:
            steps.append(self.steps[-1])
            stages.append(self.stages[-1])
            cols.append(self.columns[-1])
        self.steps, self.stages, self.columns = steps, stages, cols

    def grid(self, width: int) -> tuple[list[int], list[int], list[dict[int, float]]]:
        """(first step, stage, per-layer max) of about `width` buckets, in time order.

        Buckets never straddle a stage change, so stages stay grouped (a stage
        change may add a column or two beyond `width`)."""
        n = len(self.columns)
        if n <= width or width <= 0:
            return list(self.steps), list(self.stages), list(self.columns)
        out_s: list[int] = []
        out_g: list[int] = []
        out_c: list[dict[int, float]] = []
        cuts = sorted(
            {b * n // width for b in range(width)}
            | {n}
            | {i for i in range(1, n) if self.stages[i] != self.stages[i - 1]}
        )
        for lo, hi in zip(cuts, cuts[1:], strict=False):
            merged: dict[int, float] = {}
            for col in self.columns[lo:hi]:
                for k, v in col.items():
                    if v > merged.get(k, -1.0):
                        merged[k] = v
            out_s.append(self.steps[lo])
            out_g.append(self.stages[lo])
            out_c.append(merged)
        return out_s, out_g, out_c


class SeriesBatch:
    """Points for several series, added at the end of a batch: one compaction per series
    per batch rather than one per `cap / 2` points (only steps write these series)."""

    def __init__(self) -> None:
        self._pending: dict[int, tuple[Series, list[float], list[float]]] = {}

    def add(self, series: Series, xs: list[float], ys: list[float]) -> None:
        if not xs:
            return
        entry = self._pending.get(id(series))
        if entry is None:
            self._pending[id(series)] = (series, list(xs), list(ys))
        else:
            entry[1].extend(xs)
            entry[2].extend(ys)

    def flush(self) -> None:
        for series, xs, ys in self._pending.values():
            series.extend(xs, ys)
        self._pending.clear()
