"""The dispatch table: event class → fold. Adding an event type the cockpit shows
means a handler in one of the fold modules and one line here."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from growcockpit.protocol.events import (
    AwaitingAdvance,
    Checkpoint,
    CommandEvent,
    ErrorEvent,
    Eval,
    Event,
    Grow,
    LayerStats,
    ModelLoaded,
    Paused,
    PlanChanged,
    PlateauCheck,
    RanksMemory,
    Resumed,
    RolledBack,
    RunFinished,
    RunStarted,
    StageStarted,
    StartupPhase,
    Step,
    System,
    WarningEvent,
)
from growcockpit.protocol.samples_event import Samples
from growcockpit.session.fold import lifecycle, messages, metrics, plateau, rollback, samples

if TYPE_CHECKING:
    from growcockpit.session.fold.state import RunData

E = TypeVar("E", bound=Event)
Fold = Callable[["RunData", Any], None]


def _fold(cls: type[E], handler: Callable[[RunData, E], None]) -> tuple[type[Event], Fold]:
    """One table entry; the type checker sees that `handler` takes a `cls` event."""
    return cls, cast(Fold, handler)


FOLDS: dict[type[Event], Fold] = dict(
    [
        _fold(RunStarted, lifecycle.on_run_started),
        _fold(StageStarted, lifecycle.on_stage_started),
        _fold(PlanChanged, lifecycle.on_plan_changed),
        _fold(Paused, lifecycle.on_paused),
        _fold(Resumed, lifecycle.on_resumed),
        _fold(RolledBack, rollback.on_rolled_back),
        _fold(RunFinished, lifecycle.on_run_finished),
        _fold(StartupPhase, lifecycle.on_startup),
        _fold(Step, metrics.on_step),
        _fold(PlateauCheck, plateau.on_plateau),
        _fold(LayerStats, metrics.on_layer_stats),
        _fold(Eval, metrics.on_eval),
        _fold(System, metrics.on_system),
        _fold(RanksMemory, metrics.on_rank_memory),
        _fold(Grow, messages.on_grow),
        _fold(Checkpoint, messages.on_checkpoint),
        _fold(CommandEvent, messages.on_command),
        _fold(AwaitingAdvance, messages.on_waiting),
        _fold(WarningEvent, messages.on_warning),
        _fold(ModelLoaded, messages.on_model_loaded),
        _fold(ErrorEvent, messages.on_error),
        _fold(Samples, samples.on_samples),
    ]
)
