"""The events that announce a stage (what was entered, how, what the operator did) and
the loop's holds inside one (a manual stage waiting; a non-finite loss or a loss spike
pausing, with the rollback that recovers).

Built from explicit values so that the engine's `enter_stage` and step loop read as
the steps they take (checkpoint, operator, freeze, optimizer) rather than as event
plumbing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from growcockpit.backend.loop.sentinel import CEILING_FACTOR, SpikeSeen
from growcockpit.backend.loop.step_window import StepOutcome
from growcockpit.grow import GrowResult
from growcockpit.plan.types import Stage
from growcockpit.protocol.commands import LR_FACTOR_RANGE
from growcockpit.protocol.events import AwaitingAdvance, Error, Grow, StageStarted


@dataclass(frozen=True)
class StageEntry:
    """What entering stage `index` did, measured by the engine."""

    index: int
    step: int
    width: int
    trainable: list[int]
    op_seconds: float
    reason: str
    compile_s: float | None = None
    freed_bytes: int | None = None


def stage_started(stage: Stage, entry: StageEntry) -> StageStarted:
    return StageStarted(
        index=entry.index,
        name=stage.name,
        layers=stage.layers,
        width=entry.width,
        trainable_layers=entry.trainable,
        embeddings_trainable=stage.embeddings_trainable(),
        head_trainable=stage.head_trainable(),
        operator=stage.enter,
        op_seconds=entry.op_seconds,
        steps=stage.steps,
        advance=stage.advance,
        step=entry.step,
        compile_s=entry.compile_s,
        freed_bytes=entry.freed_bytes,
        reason=entry.reason,
    )


def grown(
    grow: GrowResult, entry: StageEntry, loss_before: float | None, loss_after: float | None
) -> Grow:
    return Grow(
        step=entry.step,
        stage=entry.index,
        operator=grow.operator,
        from_layers=grow.from_layers,
        to_layers=grow.to_layers,
        from_width=grow.from_width,
        to_width=grow.to_width,
        seconds=entry.op_seconds,
        loss_before=loss_before,
        loss_after=loss_after,
        detail=grow.detail,
    )


def awaiting_advance(stage: Stage, index: int, step: int) -> AwaitingAdvance:
    return AwaitingAdvance(
        step=step,
        stage=index,
        message=f"stage {index + 1} ({stage.name}) finished its {stage.steps} steps; "
        "advance = manual: waiting for `advance` (key g, or growcockpit ctl RUN advance)",
    )


def rollback_advice(good: int | None, run_dir: str, lr_scale: float) -> str:
    """The way back after a skipped update: `rollback` to `good`, the last checkpoint, at a
    lower LR scale (resuming as is often blows up again: the weights may be damaged), then
    `resume` (the rollback leaves the run paused, where the blow-up put it).

    `lr_scale`: the scale `good` was trained at. A tenth of it, inside the range rollback
    takes: a tenth of the scale that blew up (×1e6 after a typo) is one ctl refuses."""
    if good is None:
        return "no checkpoint to roll back to: lower the LR (set_lr), then resume, or stop"
    low, high = LR_FACTOR_RANGE
    scale = min(max(lr_scale / 10, low), high)
    return (
        f"roll back to step {good} at a lower LR scale: "
        f"`growcockpit ctl {run_dir} rollback {good} --lr-scale {scale:g}`, "
        f"then `growcockpit ctl {run_dir} resume`"
    )


def non_finite_error(
    loss: float,
    skipped: int,
    step: int,
    good: int | None = None,
    run_dir: str = "RUN",
    lr_scale: float = 1.0,
) -> Error:
    """Why the run paused: the loss or the gradient was not finite (backend/loop/step.py skipped it).

    The skipped update kept the weights finite, but the steps before it may have
    damaged them already (resuming at a lower LR then blows up again), so the
    advice is `rollback` to `good`, the last checkpoint, at a lower LR scale.
    """
    what = f"loss is {loss}" if not math.isfinite(loss) else "the gradient is not finite"
    if skipped > 1:
        what += f" ({skipped} updates skipped since the last report)"
    advice = rollback_advice(good, run_dir, lr_scale)
    return Error(
        message=f"{what} at step {step}: update skipped (weights unchanged), paused; {advice}",
        step=step,
    )


def spike_error(
    spike: SpikeSeen, good: int | None = None, run_dir: str = "RUN", lr_scale: float = 1.0
) -> Error:
    """Why the run paused: the sentinel (backend/loop/sentinel.py) saw a spike and skipped it."""
    key = "spike_z" if spike.signal == "loss" else "spike_grad_z"
    more = f" ({spike.count} spiking updates skipped)" if spike.count > 1 else ""
    how_far = (
        f"is over {CEILING_FACTOR:g}x the median {spike.median:.4g} from before the last "
        "spike (the ceiling while the spike window refills)"
        if spike.ceiling
        else f"is {spike.z:.3g} robust SDs above the median {spike.median:.4g} of the last "
        f"{spike.window} steps (metrics.{key} = {spike.limit:g})"
    )
    return Error(
        message=f"{spike.signal} spike at step {spike.step}: {spike.signal} {spike.value:.4g} "
        f"{how_far}{more}: "
        "update skipped (weights as before the step), paused; "
        f"{rollback_advice(good, run_dir, lr_scale)}; or resume if the jump is expected "
        "(the spike window starts afresh)",
        step=spike.step,
    )


@dataclass(frozen=True)
class Hold:
    """A skipped update's pause: the error event, and the Paused event's reason."""

    error: Error
    reason: str


def skipped_hold(
    outcome: StepOutcome, step: int, good: int | None, run_dir: str, lr_scale: float
) -> Hold:
    """A spike's hold when the window's only skips were spikes; otherwise the non-finite one."""
    spike = outcome.spike
    if spike is not None and spike.count == outcome.skipped and math.isfinite(outcome.loss):
        return Hold(spike_error(spike, good, run_dir, lr_scale), f"{spike.signal} spike")
    error = non_finite_error(outcome.loss, outcome.skipped, step, good, run_dir, lr_scale)
    return Hold(error, "non-finite loss")
