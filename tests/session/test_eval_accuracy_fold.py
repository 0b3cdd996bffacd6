"""Eval accuracy as the cockpit folds it: the latest value and its series, kept by the bulk
fold and the attach index, cut by a rollback, and absent (None) from older backends."""

from __future__ import annotations

from growcockpit.protocol.event_codec import decode_event, encode_event
from growcockpit.protocol.events import Eval, Event, RolledBack, Step
from growcockpit.session.attach_index import state_from_dict, state_to_dict
from growcockpit.session.fold.bulk import fold_lines
from growcockpit.session.run_state import RunState


def events() -> list[Event]:
    out: list[Event] = []
    for step in range(1, 41):
        out.append(Step(step=step, loss=1.0, lr=1e-3, step_ms=10.0))
        if step % 10 == 0:
            out.append(Eval(step=step, val_loss=1.0, val_ppl=2.7, accuracy=step / 40))
    for seq, ev in enumerate(out):
        ev.seq, ev.t = seq, 1000.0 + seq
    return out


def test_accuracy_is_folded_alike_one_by_one_in_bulk_and_from_the_index() -> None:
    one, bulk = RunState(), RunState()
    one.apply_all(events())
    fold_lines(bulk, [encode_event(ev).encode() for ev in events()])
    back = state_from_dict(state_to_dict(bulk))
    for state in (one, bulk, back):
        assert state.val_accuracy == 1.0
        assert (state.val_acc.xs, state.val_acc.ys) == ([10, 20, 30, 40], [0.25, 0.5, 0.75, 1.0])


def test_a_rollback_cuts_accuracy_back_to_the_restored_step() -> None:
    state = RunState()
    state.apply_all(events())
    state.apply(RolledBack(step=25, seq=10_000, t=9999.0))
    assert state.val_acc.xs == [10, 20] and state.val_accuracy == 0.5


def test_an_eval_without_accuracy_reads_as_before() -> None:
    old = decode_event('{"type": "eval", "seq": 1, "t": 1.0, "step": 5, "val_loss": 2.0}')
    assert isinstance(old, Eval) and old.accuracy is None
    state = RunState()
    state.apply(old)
    assert state.val_loss == 2.0 and state.val_accuracy is None and len(state.val_acc) == 0
