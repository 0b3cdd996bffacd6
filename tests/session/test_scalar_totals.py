"""The scalars the dashboard can plot beside the loss, as the fold keeps them: LR per step,
total grad norm and update ratio per `layer_stats`; the same from the bulk fold (which
folds old layer_stats by a shortcut), the attach index and event by event, and cut by a
rollback like every other series."""

from __future__ import annotations

import math

import pytest

from growcockpit.protocol.event_codec import encode_event
from growcockpit.protocol.events import Event, LayerStat, LayerStats, RolledBack, Step
from growcockpit.session.attach_index import state_from_dict, state_to_dict
from growcockpit.session.fold.bulk import FULL_LAYER_STATS, fold_lines
from growcockpit.session.fold.totals import totals
from growcockpit.session.run_state import RunState

STEPS = FULL_LAYER_STATS + 40  # enough layer_stats that the bulk fold takes its shortcut
SCALAR_SERIES = ("lr_series", "grad_norm_series", "update_ratio_series")


def events() -> list[Event]:
    out: list[Event] = []
    for step in range(1, STEPS + 1):
        out.append(Step(step=step, loss=3.0, lr=1e-3 * min(1.0, step / 10), step_ms=10.0))
        out.append(
            LayerStats(
                step=step,
                layers=[
                    LayerStat(
                        id=0, trainable=True, grad_norm=0.3, weight_norm=3.0, update_ratio=1e-3
                    ),
                    LayerStat(
                        id=1,
                        trainable=True,
                        grad_norm=0.4,
                        weight_norm=4.0,
                        update_ratio=2e-3 * step,
                    ),
                    LayerStat(id=2, trainable=False, grad_norm=None, weight_norm=9.0),
                    LayerStat(id=3, trainable=True, grad_norm=math.nan, weight_norm=1.0),
                ],
            )
        )
    for seq, ev in enumerate(out):
        ev.seq, ev.t = seq, 1000.0 + seq
    return out


def test_totals_are_the_norm_of_all_grads_and_the_whole_models_update_ratio() -> None:
    grad, ratio = totals(
        [(0.3, 3.0, 1e-3), (0.4, 4.0, 2e-3), (None, 9.0, None), (math.nan, 1.0, None)]
    )
    assert grad == pytest.approx(0.5)  # sqrt(0.09 + 0.16); the frozen and NaN layers skipped
    assert ratio == pytest.approx(math.sqrt((3e-3) ** 2 + (8e-3) ** 2) / 5.0)
    assert totals([]) == (None, None)
    assert totals([(None, None, "NaN")]) == (None, None)


def test_bulk_index_and_one_by_one_keep_the_same_scalars() -> None:
    evs = events()
    one, bulk = RunState(), RunState()
    one.apply_all(evs)
    fold_lines(bulk, [encode_event(ev).encode() for ev in evs])
    back = state_from_dict(state_to_dict(bulk))
    for name in SCALAR_SERIES:
        a, b, c = getattr(one, name), getattr(bulk, name), getattr(back, name)
        assert len(a) == STEPS, name
        assert (a.xs, a.ys) == (b.xs, b.ys) == (c.xs, c.ys), name
    assert one.lr_series.ys[4] == pytest.approx(5e-4)
    assert one.grad_norm_series.ys[0] == pytest.approx(0.5)


def test_a_rollback_cuts_the_scalars() -> None:
    state = RunState()
    state.apply_all(events())
    state.apply(RolledBack(step=30, seq=10_000, t=9999.0))
    for name in SCALAR_SERIES:
        assert max(getattr(state, name).xs) == 30, name
