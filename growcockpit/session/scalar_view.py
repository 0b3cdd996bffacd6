"""The scalars a plot beside the loss can show (LR, total grad norm, update ratio, step
time, tokens/s), without Textual: which series each is, the order a key cycles them in,
and the LR's schedule phases as lines on its plot.

The series come from the event fold (`fold/metrics.py`, `fold/totals.py`); the plot
shares the loss plot's x axis and zoom through the same `PlotView`. On the LR plot,
besides the run's markers (a stage change is where a re-warm-up starts), a line marks
where each stage's warm-up ends and, for a "wsd" schedule, where the decay begins: the
phases the header only gives as a number."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from growcockpit.plan.types import stage_warmup
from growcockpit.session.fold.plan import decode_plan
from growcockpit.session.fold.series import Series
from growcockpit.session.fold.state import RunData
from growcockpit.session.plot_view import Curves, PlotView, series_curve

ScalarKey = Literal["lr", "grad_norm", "update_ratio", "step_ms", "tokens_s"]


@dataclass(frozen=True)
class Scalar:
    """One plottable scalar: its key, its name (the plot's title, what `/` matches), and
    the state's series of it."""

    key: ScalarKey
    name: str
    series: Callable[[RunData], Series]


SCALARS: tuple[Scalar, ...] = (
    Scalar("lr", "lr", lambda s: s.lr_series),
    Scalar("grad_norm", "grad norm (total)", lambda s: s.grad_norm_series),
    Scalar("update_ratio", "update ratio", lambda s: s.update_ratio_series),
    Scalar("step_ms", "step ms", lambda s: s.step_ms_series),
    Scalar("tokens_s", "tokens/s", lambda s: s.tok_s),
)
BY_KEY: dict[ScalarKey, Scalar] = {s.key: s for s in SCALARS}


def next_scalar(current: ScalarKey | None) -> ScalarKey | None:
    """The scalar after `current` in SCALARS; after the last, None (the plot hides)."""
    keys: list[ScalarKey | None] = [None, *BY_KEY]
    return keys[(keys.index(current) + 1) % len(keys)]


def lr_phases(state: RunData) -> list[tuple[int, str]]:
    """(step, "warmup") where each started stage's warm-up ends and (step, "decay") where
    a "wsd" schedule's decay begins, from the run's plan (none while it is unknown)."""
    plan, _ = decode_plan(state.plan_dict, "run_started.plan")
    if plan is None:
        return []
    marks: list[tuple[int, str]] = []
    for index, start in sorted(state.stage_runs.starts.items()):
        if 0 <= index < len(plan.stages):
            warmup = stage_warmup(plan.stages[index], index, plan.optim.warmup_steps)
            if warmup > 0:
                marks.append((start + warmup, "warmup"))
    if plan.optim.schedule == "wsd":
        total = max(1, state.total_steps or plan.total_steps)
        marks.append((max(0, math.ceil(total - plan.optim.decay_fraction * total)), "decay"))
    return marks


def scalar_curves(state: RunData, key: ScalarKey, view: PlotView, max_points: int) -> Curves:
    """The scalar's series on the view's axis and zoom, with the LR's phases on the LR."""
    scalar = BY_KEY[key]
    extra = lr_phases(state) if key == "lr" else []
    return series_curve(state, scalar.series(state), scalar.name, view, max_points, extra)
