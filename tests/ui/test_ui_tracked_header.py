"""A tracked run's header names the loop that trains it; growcockpit's own runs stay as they were."""

from __future__ import annotations

from growcockpit.protocol.events import RunStarted, Step
from growcockpit.session.run_state import RunState
from growcockpit.ui.widgets.run_header import header_text

PLAN = {"name": "my-run", "stages": [{"name": "train", "layers": 2, "steps": 0}]}


def _header(trainer: str) -> str:
    state = RunState()
    state.apply_all([RunStarted(t=1.0, plan=PLAN, trainer=trainer), Step(t=2.0, step=1, loss=3.0)])
    return header_text(state, now=3.0).plain.splitlines()[0]


def test_the_header_names_the_trainer_of_a_tracked_run() -> None:
    assert _header("transformers.Trainer").startswith("my-run  via transformers.Trainer")


def test_an_engine_run_has_no_trainer_in_its_header() -> None:
    assert "via" not in _header("")
