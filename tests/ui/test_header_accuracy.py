"""The run header shows the last evaluation's exact-match accuracy beside its loss (a
`task:hops` run's measure of success), and nothing where the backend reports none."""

from __future__ import annotations

from growcockpit.protocol.events import Eval, Event, Step
from growcockpit.session.run_state import RunState
from growcockpit.ui.widgets.run_header import header_text


def folded(accuracy: float | None) -> RunState:
    state = RunState()
    out: list[Event] = [
        Step(step=1, loss=1.5, lr=1e-3, step_ms=10.0),
        Eval(step=1, val_loss=1.25, val_ppl=3.5, accuracy=accuracy),
    ]
    for seq, ev in enumerate(out):
        ev.seq, ev.t = seq, 1000.0 + seq
    state.apply_all(out)
    return state


def test_the_header_says_the_accuracy_of_the_last_evaluation() -> None:
    text = header_text(folded(0.9517), now=1002.0).plain
    assert "val 1.2500 · acc 95.2%" in text
    assert "acc" not in header_text(folded(None), now=1002.0).plain
