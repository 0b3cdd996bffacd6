"""After a NaN or spike pause the cockpit offers the way on: roll back at an LR scale you choose.

The weights may be damaged by the steps before a skipped update,
so resuming as is blows up again. The paused line says `b` rolls back; `b`
then asks for the LR scale (a tenth of the one that blew up is offered,
checked as the backend checks it) and sends `rollback` with `lr_scale`, then
`resume` once the rollback is accepted. Any other pause, or a blow-up already
rolled back, keeps the ordinary checkpoint-step prompt.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_fixtures import (
    FakeBackend,
    notes,
    recorded_events,
    screen_text,
    settle,
    wait_for,
    write_events,
)

from growcockpit.protocol import RunPaths
from growcockpit.protocol.events import Error, Event, Paused, Resumed, RolledBack
from growcockpit.session.fold.rollback import blown_up
from growcockpit.session.run_state import RunState
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import PromptScreen
from growcockpit.ui.screens.command_text import rollback_scale_problem, suggested_scale

SIZE = (160, 48)
AT = 60


def _paused(reason: str) -> list[Event]:
    events = recorded_events(finished=False, upto_step=AT)
    t = events[-1].t + 0.5
    message = f"{reason} at step {AT}: update skipped (weights as before the step), paused"
    return [*events, Error(t=t, step=AT, message=message), Paused(t=t, step=AT, reason=reason)]


def _folded(events: list[Event]) -> RunState:
    state = RunState()
    state.apply_all(events)
    return state


@pytest.mark.parametrize("reason", ["loss spike", "non-finite loss", "gradient norm spike"])
def test_a_blow_up_pause_offers_the_rollback(reason: str) -> None:
    state = _folded(_paused(reason))
    assert blown_up(state) and state.pause_reason == reason
    line = [e for e in state.log if e.kind == "paused"][-1]
    assert line.text == (
        f"paused ({reason}); b rolls back to the last good checkpoint at the LR scale you choose"
    )


def test_other_pauses_and_what_follows_a_blow_up_do_not() -> None:
    state = _folded(_paused("command"))
    assert state.paused and not blown_up(state)
    events = _paused("loss spike")
    t = events[-1].t
    assert not blown_up(_folded([*events, Resumed(t=t, step=AT)]))
    back = RolledBack(t=t, step=40, stage=0, step_in_stage=40, checkpoint="c/step-40")
    rolled = _folded([*events, back])
    assert rolled.paused and not blown_up(rolled), "rolled back: the ordinary prompt again"


def test_the_scale_prompt_checks_as_the_backend_does() -> None:
    assert rollback_scale_problem("0.1") == rollback_scale_problem("1") == ""
    for bad in ("0", "-1", "nan", "inf", "1e9", "abc", ""):
        assert "LR scale" in rollback_scale_problem(bad), bad
    assert (suggested_scale(1.0), suggested_scale(1000.0), suggested_scale(1e-3)) == (
        "0.1",
        "100",
        "0.001",
    )


async def test_b_after_a_spike_rolls_back_at_the_chosen_scale_then_resumes(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_events(RunPaths(run_dir).events, _paused("loss spike"))
    with FakeBackend(run_dir) as backend:
        app = GrowCockpitApp(run_dir=run_dir)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("b")
            await pilot.pause()
            assert isinstance(app.screen, PromptScreen)
            text = screen_text(app)
            assert "Roll back to the last good checkpoint?" in text
            assert "loss spike" in text and "step-40" in text, text
            assert app.screen.query_one("Input").value == "0.1", "a tenth of ×1 is offered"
            await pilot.press("escape")  # cancelled: nothing is sent
            await pilot.pause()
            assert not isinstance(app.screen, PromptScreen) and backend.requests == []
            await pilot.press("b")
            await pilot.pause()
            app.screen.query_one("Input").value = "0"
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, PromptScreen), "out of range: stays, says why"
            assert "LR scale from" in screen_text(app)
            app.screen.query_one("Input").value = "0.5"
            await pilot.press("enter")
            await wait_for(pilot, lambda: len(backend.requests) == 2)
            assert backend.requests == [("rollback", {"lr_scale": 0.5}), ("resume", {})]
            await wait_for(pilot, lambda: any("resume accepted" in m for m in notes(app)))
