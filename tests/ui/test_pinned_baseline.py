"""A baseline pinned to the dashboard (growcockpit.session.pinned_baseline, the `B` key):
its validation curve on every x axis, where the run stands against it, which runs are
offered, the pin remembered per run, and a bad baseline refused in one line."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from test_compare import linear, make_events
from textual.widgets import OptionList
from ui_fixtures import T0, notes, write_events, write_recorded_run

from growcockpit.compare import fold_events
from growcockpit.session.fold.state import RunData
from growcockpit.session.pinned_baseline import (
    SERIES,
    candidates,
    load_pinned,
    remember_pin,
    remembered_pin,
    standing,
)
from growcockpit.session.plot_view import PlotView, loss_curves
from growcockpit.session.run_state import RunState
from growcockpit.session.view_filter import ViewFilter
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.widgets import LossPlot

BASE = [(4, [0, 1, 2, 3], 100, 100.0)]  # 4 layers, all trained, 100 steps of 100 ms
GROWN = [(2, [0, 1], 50, 50.0), (4, [0, 1, 2, 3], 50, 100.0)]


async def wait_for(pilot: Any, ok: Any, what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < deadline, f"never: {what}"
        await pilot.pause(0.05)


def _run(root: Path, name: str, stages: Any, slope: float) -> Path:
    run = root / name
    run.mkdir(parents=True)
    write_events(run / "events.jsonl", make_events(stages, linear(slope)))
    return run


def _state(events: Any) -> RunState:
    state = RunState()
    for ev in events:
        state.apply(ev)
    return state


def test_the_pin_reads_the_baselines_evaluations_on_every_axis(tmp_path: Path) -> None:
    base = load_pinned(_run(tmp_path, "baseline", BASE, 0.05))
    assert base.name == "baseline" and base.status == "completed"
    assert base.final == pytest.approx(10.0 - 0.05 * 100)
    xs, ys = base.curve("step")
    assert xs == [float(s) for s in range(10, 101, 10)] and ys[-1] == pytest.approx(5.0)
    assert base.curve("time")[0][-1] == pytest.approx(10.0)  # 100 steps × 100 ms
    expected = fold_events("b", make_events(BASE, linear(0.05))).evals
    assert base.curve("flops")[0] == [e.flops for e in expected]
    assert base.curve("tokens")[0] == [float(e.tokens) for e in expected]


def test_standing_says_when_the_run_reached_the_baseline_and_how_much_sooner(
    tmp_path: Path,
) -> None:
    base = load_pinned(_run(tmp_path, "baseline", BASE, 0.05))  # final 5.0 at step 100
    grown = _state(make_events(GROWN, linear(0.08)))  # 10 - 0.08 s ≤ 5.0 first at step 70
    line = standing(base, grown, "step")
    assert line == "baseline final 5.000: reached at step 70, 1.43× sooner"
    # on training time: 50 × 50 ms + 20 × 100 ms = 4.5 s against the baseline's 10 s
    assert "reached at 4.5 training s, 2.22× sooner" in standing(base, grown, "time")
    later = _state(make_events([(4, [0, 1, 2, 3], 200, 100.0)], linear(0.04, steps=200)))
    assert standing(base, later, "step").endswith("reached at step 130, 1.30× later")
    slow = _state(make_events(GROWN, linear(0.02)))  # ends at 8.0
    assert standing(base, slow, "step").endswith("not reached, this run's val 8.000 (+3.000)")
    assert standing(base, RunState(), "step").endswith("this run has no validation loss yet")


def test_standing_gives_no_ratio_against_a_baseline_measuring_another_loss(
    tmp_path: Path,
) -> None:
    base = load_pinned(_run(tmp_path, "baseline", BASE, 0.05))
    events = make_events(GROWN, linear(0.08))
    plan = dict(events[0].plan)  # type: ignore[attr-defined]
    events[0].plan = {**plan, "model": {**plan["model"], "family": "llama"}}  # type: ignore[attr-defined]
    line = standing(base, _state(events), "step")
    assert line == (
        "baseline final 5.000: not comparable (family llama vs gpt2): a different loss, no ratio"
    )


def test_a_control_that_ends_below_the_pinned_baseline_says_depth_does_not_pay(
    tmp_path: Path,
) -> None:
    base = load_pinned(_run(tmp_path, "baseline", BASE, 0.05))  # final 5.0
    events = make_events([(1, [0], 100, 25.0)], linear(0.06))  # a 1-layer model, ends at 4.0
    plan = dict(events[0].plan)  # type: ignore[attr-defined]
    one = {**plan["stages"][0], "layers": 1}
    events[0].plan = {**plan, "model": {**plan["model"], "final_layers": 1}, "stages": [one]}  # type: ignore[attr-defined]
    assert standing(base, _state(events), "step") == (
        "baseline final 5.000: this run is a control, depth does not pay at this budget: "
        "a fixed 1-layer model ends lowest; no growth speedup is claimed"
    )
    live = _state(events[:-1])  # still training: no verdict on depth yet
    assert "control" not in standing(base, live, "step")


def _fixed(root: Path, name: str, layers: int, slope: float, family: str = "gpt2") -> Path:
    """An ended run of the baseline's model at `layers` layers (a control below 4)."""
    events = make_events([(layers, list(range(layers)), 100, 25.0 * layers)], linear(slope))
    plan = dict(events[0].plan)  # type: ignore[attr-defined]
    stage = {**plan["stages"][0], "layers": layers}
    model = {**plan["model"], "final_layers": layers, "family": family}
    events[0].plan = {**plan, "model": model, "stages": [stage]}  # type: ignore[attr-defined]
    run = root / name
    run.mkdir(parents=True)
    write_events(run / "events.jsonl", events)
    return run


def test_the_pin_finds_controls_among_the_runs_and_applies_the_depth_gate(
    tmp_path: Path,
) -> None:
    base_dir = _run(tmp_path, "baseline", BASE, 0.05)  # 4 layers, final 5.0
    here = _run(tmp_path, "grown", GROWN, 0.08)  # the watched growth run
    _fixed(tmp_path, "one-layer", 1, 0.06)  # ends at 4.0: below the baseline
    _fixed(tmp_path, "llama-one-layer", 1, 0.09, family="llama")  # another loss: not a control
    grown = _state(make_events(GROWN, linear(0.08)))
    alone = load_pinned(base_dir)  # no runs folder given: no search, the line as before
    assert alone.found is None
    assert (
        standing(alone, grown, "step") == "baseline final 5.000: reached at step 70, 1.43× sooner"
    )

    pin = load_pinned(base_dir, tmp_path, (here,))
    assert pin.found is not None and pin.found.controls == ("one-layer",) and pin.found.seeds == 1
    assert not pin.found.gate.pays and pin.found.gate.best_control.layers == 1
    assert standing(pin, grown, "step") == (
        "baseline final 5.000: reached at step 70, 1.43× sooner (measured); depth does not "
        "pay at this budget: a fixed 1-layer model ends lowest; no growth speedup is claimed "
        "(1 control run found (one-layer))"
    )


def test_the_gate_says_depth_pays_when_the_found_controls_end_well_above(tmp_path: Path) -> None:
    base_dir = _run(tmp_path, "baseline", BASE, 0.05)  # final 5.0
    _fixed(tmp_path, "two-layers", 2, 0.03)  # ends at 7.0
    _fixed(tmp_path, "one-layer", 1, 0.02)  # ends at 8.0
    _run(tmp_path, "grown-live", GROWN, 0.08)
    pin = load_pinned(base_dir, tmp_path)
    assert pin.found is not None and pin.found.gate.pays
    assert pin.found.controls == ("one-layer", "two-layers")
    line = standing(pin, _state(make_events(GROWN, linear(0.08))), "step")
    assert line == (
        "baseline final 5.000: reached at step 70, 1.43× sooner; depth pays: the baseline ends "
        "lowest against 2 control runs found (one-layer, two-layers)"
    )


def test_loss_curves_draw_the_pin_and_the_filter_names_it(tmp_path: Path) -> None:
    base = load_pinned(_run(tmp_path, "baseline", BASE, 0.05))
    state: RunData = _state(make_events(GROWN, linear(0.08)))
    shown = loss_curves(state, PlotView("step"), 10_000, base.curve("step"))
    assert set(shown.curves) == {"train", "val", "baseline"}
    assert shown.curves["baseline"].ys[-1] == pytest.approx(5.0)
    only = loss_curves(
        state, PlotView("step", only=ViewFilter.parse("baseline")), 100, base.curve("step")
    )
    assert set(only.curves) == {"baseline"} and only.series == (SERIES,)
    unpinned = loss_curves(state, PlotView("step"), 10_000)
    assert set(unpinned.curves) == {"train", "val"} and SERIES not in unpinned.left_out


def test_candidates_list_other_runs_baselines_first(tmp_path: Path) -> None:
    here = _run(tmp_path, "grown", GROWN, 0.08)
    _run(tmp_path, "another", GROWN, 0.07)
    _run(tmp_path, "baseline-lr3e-3", BASE, 0.05)
    names = [r.name for r in candidates(tmp_path, here)]
    assert names[0] == "baseline-lr3e-3" and set(names) == {"baseline-lr3e-3", "another"}
    assert load_pinned(tmp_path / "another").label() == "baseline another"
    assert load_pinned(tmp_path / "baseline-lr3e-3").label() == "baseline-lr3e-3"


def test_a_bad_baseline_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="without a validation loss") as no_eval:
        run = tmp_path / "fresh"
        run.mkdir()
        write_events(run / "events.jsonl", make_events(BASE, {}))
        load_pinned(run)
    assert "\n" not in str(no_eval.value)
    training = tmp_path / "training"  # no evaluation yet, but still training: pinned, waiting
    training.mkdir()
    write_events(training / "events.jsonl", make_events(BASE, {})[:-1])  # no run_finished
    waiting = load_pinned(training)
    assert (
        waiting.status == "running" and waiting.final is None and waiting.curve("step") == ([], [])
    )
    assert standing(waiting, RunState(), "step") == "baseline training: no validation loss yet"
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(tmp_path / "fresh" / "events.jsonl", linked / "events.jsonl")
    with pytest.raises(ValueError, match="cannot pin it as the baseline") as bad:
        load_pinned(linked)
    assert "\n" not in str(bad.value)
    with pytest.raises(ValueError, match="no such run"):
        load_pinned(tmp_path / "deleted")


def test_the_pin_is_remembered_per_run_and_forgotten(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    a, b, base = tmp_path / "a", tmp_path / "b", tmp_path / "base"
    assert remembered_pin(a, settings) is None
    assert remember_pin(a, base, settings) and remember_pin(b, a, settings)
    assert (
        remembered_pin(a, settings) == base.resolve() and remembered_pin(b, settings) == a.resolve()
    )
    assert remember_pin(a, None, settings)
    assert remembered_pin(a, settings) is None and remembered_pin(b, settings) == a.resolve()
    settings.write_text('{"pinned_baselines": ["not", "a", "map"]}')
    assert remembered_pin(a, settings) is None  # a broken file means no pin, never an error


async def test_dashboard_pins_a_baseline_remembers_it_and_unpins(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = write_recorded_run(runs / "mslt-demo")
    write_recorded_run(runs / "baseline-demo")  # the same curve: reached at its last eval, 1×
    app = GrowCockpitApp(run_dir=run, runs_root=runs, clock=lambda: T0 + 100)
    async with app.run_test(size=(160, 48)) as pilot:
        plot = app.screen.query_one(LossPlot)
        await wait_for(pilot, lambda: plot.shown.curves, "the run's curves")
        await pilot.press("B")
        await wait_for(pilot, lambda: app.screen.query(OptionList), "the run list")
        await pilot.press("enter")  # the first run offered: the only other one
        await wait_for(pilot, lambda: "baseline" in plot.shown.curves, "the baseline drawn")
        assert plot.pinned is not None and plot.pinned.name == "baseline-demo"
        assert str(plot.border_subtitle).startswith("baseline-demo final ")
        assert str(plot.border_subtitle).endswith("reached at step 80, 1.00× sooner")
        await wait_for(pilot, lambda: remembered_pin(run) is not None, "remembered")
        assert remembered_pin(run) == (runs / "baseline-demo").resolve()
    again = GrowCockpitApp(run_dir=run, runs_root=runs, clock=lambda: T0 + 100)
    async with again.run_test(size=(160, 48)) as pilot:
        plot = again.screen.query_one(LossPlot)
        await wait_for(pilot, lambda: "baseline" in plot.shown.curves, "the pin restored")
        await pilot.press("B")
        await wait_for(pilot, lambda: again.screen.query(OptionList), "the run list")
        first = again.screen.query_one(OptionList).get_option_at_index(0)
        assert "unpin" in str(first.prompt)
        second = again.screen.query_one(OptionList).get_option_at_index(1)
        assert str(second.prompt).startswith("baseline-demo") and "· pinned" in str(second.prompt)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "baseline" not in plot.shown.curves, "unpinned")
        await wait_for(pilot, lambda: remembered_pin(run) is None, "forgotten")
    remember_pin(run, runs / "deleted-since")  # a remembered baseline whose run is gone
    gone = GrowCockpitApp(run_dir=run, runs_root=runs, clock=lambda: T0 + 100)
    async with gone.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: remembered_pin(run) is None, "a gone pin forgotten")
        await wait_for(pilot, lambda: any("no such run" in n for n in notes(gone)), "said so")
        assert "baseline" not in gone.screen.query_one(LossPlot).shown.curves
