"""The loop's state as a table: every phase and hold, every transition, the state after.

`LoopState` (backend/loop/loop_state.py) replaced six booleans; this table is every
combination the stage loop can be in and where each move takes it, so a new transition
or phase is a new row, never a flag set from afar.
"""

from __future__ import annotations

import pytest

from growcockpit.backend.loop.loop_state import LoopState, Phase

PHASES: list[Phase] = ["running", "waiting", "advancing", "stopping"]

# (transition, phase before) -> phase after; the pause hold and the signal are not touched
PHASE_TABLE: dict[tuple[str, Phase], Phase] = {
    ("pause", "running"): "running",
    ("pause", "waiting"): "waiting",
    ("pause", "advancing"): "advancing",
    ("pause", "stopping"): "stopping",
    ("resume", "running"): "running",
    ("resume", "waiting"): "waiting",
    ("resume", "advancing"): "advancing",
    ("resume", "stopping"): "stopping",
    ("wait", "running"): "waiting",
    ("wait", "waiting"): "waiting",
    ("wait", "advancing"): "advancing",
    ("wait", "stopping"): "stopping",
    ("advance", "running"): "advancing",
    ("advance", "waiting"): "advancing",
    ("advance", "advancing"): "advancing",
    ("advance", "stopping"): "stopping",  # a stop is final: an advance never undoes it
    ("stop", "running"): "stopping",
    ("stop", "waiting"): "stopping",
    ("stop", "advancing"): "stopping",
    ("stop", "stopping"): "stopping",
    ("next_stage", "running"): "running",
    ("next_stage", "waiting"): "running",  # entered the next stage, or rolled back
    ("next_stage", "advancing"): "running",
    ("next_stage", "stopping"): "stopping",
    ("signal_stop", "running"): "running",  # agreed by the ranks first (command_loop.py)
    ("signal_stop", "waiting"): "waiting",
    ("signal_stop", "advancing"): "advancing",
    ("signal_stop", "stopping"): "stopping",
}

PAUSE_AFTER = {"pause": True, "resume": False}


@pytest.mark.parametrize(("move", "before"), sorted(PHASE_TABLE))
@pytest.mark.parametrize("paused", [False, True])
def test_each_transition_from_each_state(move: str, before: Phase, paused: bool) -> None:
    state = LoopState(phase=before, paused=paused)
    getattr(state, move)()
    assert state.phase == PHASE_TABLE[move, before]
    assert state.paused == PAUSE_AFTER.get(move, paused)
    assert state.stop_signalled == (move == "signal_stop")


def test_the_table_covers_every_transition_and_phase() -> None:
    moves = {name for name in vars(LoopState) if not name.startswith("_")}
    moves -= {"stopping", "waiting", "advancing", "blocks", "shown", "phase", "paused"}
    moves -= {"stop_signalled"}
    assert {move for move, _ in PHASE_TABLE} == moves
    assert {before for _, before in PHASE_TABLE} == set(PHASES)


@pytest.mark.parametrize(
    ("phase", "paused", "shown", "blocks"),
    [
        ("running", False, "running", False),
        ("running", True, "paused", True),
        ("waiting", False, "waiting", True),
        ("waiting", True, "paused", True),  # paused while waiting: the pause shows
        ("advancing", False, "running", False),
        ("advancing", True, "paused", True),
        ("stopping", False, "running", False),
        ("stopping", True, "paused", True),
    ],
)
def test_what_the_cockpit_sees_and_when_commands_are_waited_for(
    phase: Phase, paused: bool, shown: str, blocks: bool
) -> None:
    state = LoopState(phase=phase, paused=paused)
    assert (state.shown, state.blocks) == (shown, blocks)


def test_wait_says_whether_it_started_the_wait() -> None:
    """The engine emits awaiting_advance once, when the wait starts."""
    state = LoopState()
    assert state.wait() is True
    assert state.wait() is False
