"""The x axes a plot can use besides the step: tokens, training time and estimated FLOPs.

Every series the folds keep is indexed by step. Three more cumulative series map a
step to the tokens trained so far, the training seconds so far and the estimated
FLOPs so far; a plot converts its step x values through them (piecewise linear, the
maps are monotone), so no series is stored four times. Training time counts what
`growcockpit compare` counts: each step event's `step_ms` times the steps it stands
for, plus the operators' `op_seconds`; pauses, evaluations and checkpoints are left
out. FLOPs are the plan's cost model priced per stage as `stage_started` says it ran
(`growcockpit.compare.stage_flops_per_token`), times the tokens each step trained;
a run whose plan cannot be read has no FLOPs axis.

The maps are `Series`, so they are bounded, cut by a rollback and saved in the attach
index like every other series; their min/max compaction of a monotone series keeps
each bucket's first and last point, which is what interpolation needs.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from growcockpit.compare import stage_flops_per_token
from growcockpit.protocol.events import RolledBack, StageStarted
from growcockpit.session.fold.plan import decode_plan

if TYPE_CHECKING:
    from growcockpit.session.fold.series import Series, SeriesBatch
    from growcockpit.session.fold.state import RunData

Axis = Literal["step", "tokens", "time", "flops"]
AXES: tuple[Axis, ...] = ("step", "tokens", "time", "flops")
MAP_SERIES = ("tokens_at", "train_s_at", "flops_at")  # RunData's cumulative maps


def on_step(state: RunData, step: int, tokens: int, step_ms: float) -> None:
    """Count one step event (it stands for the steps since the previous one)."""
    ran = max(1, step - state.axes_step)
    state.train_s_total += max(0.0, step_ms or 0.0) * ran / 1e3
    state.train_s_at.append(step, state.train_s_total)
    if tokens:
        if state.flops_per_token is not None:
            state.flops_total += state.flops_per_token * max(0, tokens - state.axes_tokens)
            state.flops_at.append(step, state.flops_total)
        state.tokens_at.append(step, tokens)
        state.axes_tokens = tokens
    state.axes_step = step


def on_steps(
    state: RunData,
    steps: Sequence[int],
    tokens: Sequence[int | None],
    step_ms: Sequence[float | None],
    batch: SeriesBatch,
) -> None:
    """`on_step` over a run of step events, their points added to `batch` (the bulk fold)."""
    last, seen, total = state.axes_step, state.axes_tokens, state.train_s_total
    per_token, flops = state.flops_per_token, state.flops_total
    time_y: list[float] = []
    tok_x: list[float] = []
    tok_y: list[float] = []
    flop_y: list[float] = []
    for step, tok, ms in zip(steps, tokens, step_ms, strict=True):
        total += max(0.0, ms or 0.0) * max(1, step - last) / 1e3
        time_y.append(total)
        if tok:
            if per_token is not None:
                flops += per_token * max(0, tok - seen)
                flop_y.append(flops)
            tok_x.append(step)
            tok_y.append(tok)
            seen = tok
        last = step
    batch.add(state.train_s_at, list(steps), time_y)
    batch.add(state.tokens_at, tok_x, tok_y)
    if per_token is not None:
        batch.add(state.flops_at, tok_x, flop_y)
    state.axes_step, state.axes_tokens = last, seen
    state.train_s_total, state.flops_total = total, flops


def on_stage_started(state: RunData, ev: StageStarted) -> None:
    """The operator's seconds are training time; the stage's FLOPs per token as it ran."""
    state.train_s_total += max(0.0, ev.op_seconds)
    plan, _ = decode_plan(state.plan_dict, "run_started.plan")
    try:
        state.flops_per_token = stage_flops_per_token(plan, ev) if plan is not None else None
    except (ValueError, ZeroDivisionError, IndexError):  # a plan the cost model cannot price
        state.flops_per_token = None


def on_rolled_back(state: RunData, ev: RolledBack) -> None:
    """After the maps were cut at the restored step: go on counting from there."""
    state.train_s_total = state.train_s_at.last() or 0.0
    state.flops_total = state.flops_at.last() or 0.0
    state.axes_step, state.axes_tokens = ev.step, ev.tokens


def has_axis(state: RunData, axis: Axis) -> bool:
    """Whether the run's log says enough to draw against `axis`."""
    return axis == "step" or len(axis_map(state, axis) or ()) > 0


def axis_map(state: RunData, axis: Axis) -> Series | None:
    """The cumulative map of `axis` (None for the step axis, which needs none)."""
    if axis == "step":
        return None
    return {"tokens": state.tokens_at, "time": state.train_s_at, "flops": state.flops_at}[axis]


def convert(xs: Sequence[float], map_xs: Sequence[float], map_ys: Sequence[float]) -> list[float]:
    """Steps `xs` → the map's values, linear between its points, from (0, 0) before the
    first and flat after the last. Ascending `xs` take one merge walk (plots are in step
    order); others a binary search each."""
    if not map_xs:
        return [0.0] * len(xs)
    out: list[float] = []
    j = 0  # map_xs[j - 1] <= x < map_xs[j]
    n = len(map_xs)
    prev_x = float("-inf")
    for x in xs:
        if x < prev_x:
            j = bisect_right(map_xs, x)
        else:
            while j < n and map_xs[j] <= x:
                j += 1
        prev_x = x
        if j >= n:
            out.append(map_ys[-1])
        elif j == 0:  # before the map's first point: from the origin
            x1 = map_xs[0]
            out.append(map_ys[0] * x / x1 if 0 < x < x1 else 0.0)
        else:  # map_xs[j - 1] <= x < map_xs[j]
            x0, x1, y0 = map_xs[j - 1], map_xs[j], map_ys[j - 1]
            out.append(y0 + (map_ys[j] - y0) * (x - x0) / (x1 - x0))
    return out
