"""What the compare screen draws, without Textual: runs' train and validation loss curves
on one x axis, their colours and verdicts.

The curves and the verdict come from `growcockpit.compare` (the same code as the
headless `growcockpit compare`); this module picks the default target run, gives each
run its colour and shapes the curves for the two plots (`plot_view.shape`: the same
axes, units, zoom and smoothing as the dashboard).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

from growcockpit.compare import (
    EvalPoint,
    RunProgress,
    StageMark,
    TrainPoint,
    Verdict,
    load_progress,
)
from growcockpit.compare.gated import gated_verdicts
from growcockpit.session.fold.axes import AXES, Axis
from growcockpit.session.plot_view import Curves, PlotView, shape
from growcockpit.session.smoothing import twema


@dataclass
class Comparison:
    """Selected runs, the target run among them and each run's verdict."""

    runs: list[RunProgress]
    target: int | None
    verdicts: list[Verdict]
    gate: str = ""  # the depth gate's line where fixed-size controls are compared

    @property
    def target_loss(self) -> float | None:
        return self.runs[self.target].final_val_loss if self.target is not None else None


def load_runs(paths: list[Path]) -> list[RunProgress]:
    """Each run's progress; a run whose log cannot be read shows as empty, named with why."""
    out = []
    for p in paths:
        try:
            out.append(load_progress(p))
        except OSError as exc:
            out.append(RunProgress(f"{Path(p).name} (unreadable: {exc.strerror or exc})"))
    return out


def named_baseline(run: RunProgress) -> bool:
    return "baseline" in run.name.lower() or "baseline" in run.plan_name.lower()


def is_baseline(run: RunProgress) -> bool:
    """Named a baseline, or a plan of one stage (the full model from the start: no growth)."""
    return named_baseline(run) or run.plan_stages == 1


def default_target(runs: list[RunProgress]) -> int | None:
    """The longest-trained baseline that has evaluated (a run named so first, then a
    one-stage plan), else the first run that has evaluated. A shortened baseline beside
    the full one is not the target, nor is the newest run just because it is first."""
    evaluated = [i for i, r in enumerate(runs) if r.evals]
    for pick in (
        [i for i in evaluated if named_baseline(runs[i])],
        [i for i in evaluated if is_baseline(runs[i])],
    ):
        if pick:
            return max(pick, key=lambda i: (runs[i].step, -i))
    return evaluated[0] if evaluated else None


def compare(runs: list[RunProgress], target: int | None) -> Comparison:
    """The verdicts of `runs` against run `target` (None: `default_target`)."""
    if target is None or not 0 <= target < len(runs) or not runs[target].evals:
        target = default_target(runs)
    if target is None:
        return Comparison(runs, target, [])
    gated = gated_verdicts(runs, runs[target])
    return Comparison(runs, target, gated.verdicts, gated.note if gated.gate else "")


def short_verdict(v: Verdict) -> str:
    """The verdict for a table whose target is named beside it: "reaches the target 2.0×
    sooner (wall)…", so the whole line fits (the CLI keeps the target's name in it)."""
    return v.text.replace(f"{v.target_run}'s final loss", "the target", 1)


def next_target(comparison: Comparison) -> int | None:
    """The next run (after the current target) that has evaluated: the `t` key."""
    n = len(comparison.runs)
    start = -1 if comparison.target is None else comparison.target
    for k in range(1, n + 1):
        i = (start + k) % n
        if comparison.runs[i].evals:
            return i
    return None


def run_has_axis(run: RunProgress, axis: Axis) -> bool:
    """Whether a run can be drawn against `axis` (FLOPs need a plan the cost model prices)."""
    return axis != "flops" or run.flops is not None


def next_compare_axis(runs: list[RunProgress], axis: Axis) -> Axis:
    """The next axis after `axis` that some selected run can be drawn against."""
    i = AXES.index(axis)
    for k in range(1, len(AXES) + 1):
        candidate = AXES[(i + k) % len(AXES)]
        if any(run_has_axis(r, candidate) for r in runs) or not runs:
            return candidate
    return "step"


def point_x(point: EvalPoint | TrainPoint | StageMark, axis: Axis) -> float | None:
    """Where `point` sits on `axis` (None: a FLOPs axis of a run whose plan is unknown)."""
    if axis == "step":
        return float(point.step)
    if axis == "tokens":
        return float(point.tokens)
    if axis == "time":
        return point.wall_s
    return point.flops


def _xy(
    points: list[EvalPoint] | list[TrainPoint], axis: Axis, value: str
) -> tuple[list[float], list[float]]:
    xs: list[float] = []
    ys: list[float] = []
    for p in points:
        x = point_x(p, axis)
        if x is not None:
            xs.append(x)
            ys.append(getattr(p, value))
    return xs, ys


def compare_curves(runs: list[RunProgress], view: PlotView, max_points: int) -> Curves:
    """Every run's train loss (TWEMA on the axis, or raw) and val loss, keyed "train:<i>" and
    "val:<i>" for run i, on one x axis, unit and zoom window; markers are the runs' later
    stage starts, their kind the run's index."""
    raw: dict[str, tuple[list[float], list[float]]] = {}
    marks: list[tuple[float, str]] = []
    for i, run in enumerate(runs):
        if not run_has_axis(run, view.axis):
            continue
        tx, ty = _xy(run.train, view.axis, "loss")
        raw[f"train:{i}"] = (tx, ty if view.raw else twema(tx, ty, view.factor))
        raw[f"val:{i}"] = _xy(run.evals, view.axis, "val_loss")
        for m in run.stages:
            x = point_x(m, view.axis)
            if x is not None:
                marks.append((x, str(i)))
    return shape(raw, marks, view.axis, view.zoom, max_points)


def run_colours(names: list[str], palette: int) -> dict[str, int]:
    """A palette index per run name: a hash of the name (crc32: the same in every session),
    moved to the next free index when another of these runs holds it. Runs are placed
    in name order, so a run keeps its colour whatever order it was selected in."""
    taken: set[int] = set()
    out: dict[str, int] = {}
    for name in sorted(set(names)):
        index = zlib.crc32(name.encode("utf-8")) % palette
        for k in range(palette):
            if (index + k) % palette not in taken:
                index = (index + k) % palette
                break
        out[name] = index
        if len(taken) < palette - 1:
            taken.add(index)
        else:
            taken.clear()  # every colour used: start sharing
    return out
