"""The events that announce a stage (what was entered, how, what the operator did) and
the loop's two holds inside one (a manual stage waiting, a non-finite loss pausing).

Built from explicit values so that the engine's `enter_stage` and step loop read as
the steps they take (checkpoint, operator, freeze, optimizer) rather than as event
plumbing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from growcockpit.grow import GrowResult
from growcockpit.plan.types import Stage
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


def non_finite_error(
    loss: float,
    skipped: int,
    step: int,
    good: int | None = None,
    run_dir: str = "RUN",
    lr_scale: float = 1.0,
) -> Error:
    """Why the run paused: the loss or the gradient was not finite (backend/step.py skipped it).

    The skipped update kept the weights finite, but the steps before it may have
    damaged them already (resuming at a lower LR then blows up again), so the
    advice is `rollback` to `good`, the last checkpoint, at a lower LR scale.
    """
    what = f"loss is {loss}" if not math.isfinite(loss) else "the gradient is not finite"
    if skipped > 1:
        what += f" ({skipped} updates skipped since the last report)"
    if good is None:
        advice = "no checkpoint to roll back to: lower the LR (set_lr), then resume, or stop"
    else:
        advice = (
            f"roll back to step {good} at a lower LR scale: "
            f"`growcockpit ctl {run_dir} rollback {good} --lr-scale {lr_scale / 10:g}`"
        )
    return Error(
        message=f"{what} at step {step}: update skipped (weights unchanged), paused; {advice}",
        step=step,
    )
