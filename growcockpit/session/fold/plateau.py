"""The `advance = "plateau"` trigger as the cockpit sees it: its latest state and a label."""

from __future__ import annotations

from typing import TYPE_CHECKING

from growcockpit.protocol.events import PlateauCheck

if TYPE_CHECKING:
    from growcockpit.session.fold.state import RunData

# stage_started.reason → what the event log adds after the stage line ("" says nothing new)
REASON_TEXT = {"plateau": "the previous stage's loss plateaued", "command": "advanced by command"}


def on_plateau(state: RunData, ev: PlateauCheck) -> None:
    state.plateau = ev
    if ev.fired:
        rate = f"{ev.rate:.3g}" if ev.rate is not None else "?"
        state.log_line(
            ev.step,
            "plateau",
            f"loss EMA fell {rate} per 1M tokens over {ev.patience} steps "
            f"(≤ min_delta {ev.min_delta:g}): entering the next stage",
            "info",
            ev.t,
        )


def plateau_label(state: RunData, wide: bool = True) -> str:
    """How close the current stage's trigger is to firing, e.g. "(plateau 0.12 > 0.05 /1M tok)"."""
    ev = state.plateau
    if ev is None or ev.stage != state.stage_index:
        return " (plateau)"
    if ev.fired:
        return " (plateau reached)"
    if ev.rate is None:
        return f" (plateau: window {ev.seen}/{ev.patience})"
    unit = " per 1M tok" if wide else ""
    return f" (plateau: falls {ev.rate:.3g} > {ev.min_delta:g}{unit})"
