"""The x-axis maps (growcockpit.session.fold.axes): step -> tokens, training time, FLOPs."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_fixtures import recorded_events, write_long_log

from growcockpit.compare import fold_events
from growcockpit.protocol.eventlog import read_all
from growcockpit.protocol.events import RolledBack, RunStarted, StageStarted, Step
from growcockpit.protocol.rundir import RunPaths
from growcockpit.session.attach_index import state_from_dict, state_to_dict
from growcockpit.session.fold.axes import MAP_SERIES, axis_map, convert, has_axis
from growcockpit.session.fold.bulk import fold_lines
from growcockpit.session.run_state import RunState


def at(state: RunState, axis: str, steps: list[float]) -> list[float]:
    series = axis_map(state, axis)  # type: ignore[arg-type]
    assert series is not None
    return convert(steps, series.xs, series.ys)


def test_maps_agree_with_the_compare_fold_at_every_evaluation() -> None:
    """Training time leaves the 30 s pause out and counts the operators, FLOPs are the cost
    model's as `growcockpit compare` prices them: the two folds agree at each eval."""
    events = recorded_events()
    state = RunState()
    state.apply_all(events)
    progress = fold_events("r", events)
    steps = [float(p.step) for p in progress.evals]
    assert at(state, "time", steps) == pytest.approx([p.wall_s for p in progress.evals])
    assert at(state, "flops", steps) == pytest.approx([p.flops for p in progress.evals])
    assert at(state, "tokens", steps) == pytest.approx([2048 * s for s in steps])
    assert at(state, "time", [80.0]) == pytest.approx([progress.wall_s])
    assert all(has_axis(state, a) for a in ("step", "tokens", "time", "flops"))


def test_a_run_without_a_readable_plan_has_no_flops_axis() -> None:
    events = [
        RunStarted(run_id="r", plan={"name": "x", "model": {"family": "nope"}}),
        StageStarted(index=0, layers=2, trainable_layers=[0, 1], steps=3),
        *(Step(step=s, tokens=10 * s, step_ms=100.0) for s in (1, 2, 3)),
    ]
    state = RunState()
    state.apply_all(events)
    assert not has_axis(state, "flops") and has_axis(state, "time")
    assert at(state, "time", [3.0]) == pytest.approx([0.3])


def test_convert_interpolates_from_the_origin_and_stays_flat_after_the_end() -> None:
    xs, ys = [10.0, 20.0, 20.0, 40.0], [100.0, 200.0, 250.0, 450.0]
    assert convert([0.0, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 99.0], xs, ys) == pytest.approx(
        [0.0, 50.0, 100.0, 150.0, 250.0, 350.0, 450.0, 450.0]
    )
    assert convert([30.0, 5.0, 15.0], xs, ys) == pytest.approx([350.0, 50.0, 150.0])  # unsorted
    assert convert([3.0], [], []) == [0.0]


def test_a_rollback_cuts_the_maps_and_counting_goes_on_from_there() -> None:
    events = [
        RunStarted(run_id="r"),
        StageStarted(index=0, layers=2, trainable_layers=[0, 1], steps=100),
        *(Step(seq=s + 2, step=s, tokens=10 * s, step_ms=100.0) for s in range(1, 11)),
        RolledBack(seq=13, step=5, tokens=50, from_step=10),
        *(Step(seq=s + 8, step=s, tokens=10 * s, step_ms=200.0) for s in range(6, 9)),
    ]
    state = RunState()
    state.apply_all(events)
    assert state.train_s_at.xs == [1, 2, 3, 4, 5, 6, 7, 8]
    assert at(state, "time", [5.0, 8.0]) == pytest.approx([0.5, 0.5 + 3 * 0.2])
    assert at(state, "tokens", [8.0]) == [80.0]


def test_bulk_fold_and_the_attach_index_keep_the_maps(tmp_path: Path) -> None:
    path = RunPaths(tmp_path).events
    write_long_log(path, n_events=4_000, layers=4)
    lines = [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]
    bulk, one = RunState(), RunState()
    fold_lines(bulk, lines)
    one.apply_all(read_all(path))
    back = state_from_dict(state_to_dict(bulk))
    for name in MAP_SERIES:
        a, b, c = getattr(bulk, name), getattr(one, name), getattr(back, name)
        assert len(b) > 0, name
        assert (a.xs, a.ys) == (b.xs, b.ys) == (c.xs, c.ys), name
    assert (back.train_s_total, back.flops_total, back.axes_step) == (
        one.train_s_total,
        one.flops_total,
        one.axes_step,
    )
    # a batch cut mid-way folds to the same maps
    pieces = RunState()
    for i in range(0, len(lines), 333):
        fold_lines(pieces, lines[i : i + 333])
    assert pieces.train_s_at.ys == pytest.approx(one.train_s_at.ys)


def test_compare_counts_a_rollback_as_the_cockpit_does() -> None:
    """After a rollback the abandoned steps' time, FLOPs and evaluations are dropped in the
    compare fold too, so `growcockpit compare` and the dashboard's axes agree."""
    from growcockpit.protocol.events import Eval

    plan = {
        "name": "p",
        "model": {"family": "gpt2", "hidden_size": 32, "num_heads": 2, "final_layers": 2},
        "stages": [{"name": "s", "layers": 2, "enter": "init", "steps": 100}],
    }
    events = [
        RunStarted(run_id="r", plan=plan),
        StageStarted(index=0, layers=2, trainable_layers=[0, 1], steps=100),
        *(Step(seq=s + 2, step=s, tokens=10 * s, step_ms=100.0) for s in range(1, 11)),
        Eval(seq=13, step=10, val_loss=9.0),
        RolledBack(seq=14, step=5, tokens=50, from_step=10),
        *(Step(seq=s + 9, step=s, tokens=10 * s, step_ms=200.0) for s in range(6, 9)),
        Eval(seq=18, step=8, val_loss=7.0),
    ]
    state = RunState()
    state.apply_all(events)
    progress = fold_events("r", events)
    assert progress.wall_s == pytest.approx(0.5 + 3 * 0.2) == at(state, "time", [8.0])[0]
    assert progress.flops == pytest.approx(at(state, "flops", [8.0])[0])
    assert progress.flops is not None and progress.flops > 0
    assert [(p.step, p.val_loss) for p in progress.evals] == [(8, 7.0)]
    assert [p.step for p in progress.train] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert progress.step == 8
