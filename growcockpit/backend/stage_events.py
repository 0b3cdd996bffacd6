"""The events that announce a stage: what was entered, how, and what the operator did.

Built from explicit values so that the engine's `enter_stage` reads as the steps it
takes (checkpoint, operator, freeze, optimizer) rather than as event plumbing.
"""

from __future__ import annotations

from dataclasses import dataclass

from growcockpit.grow import GrowResult
from growcockpit.plan.types import Stage
from growcockpit.protocol.events import Grow, StageStarted


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
