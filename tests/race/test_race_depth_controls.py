"""Fixed-size controls race by default, at equal compute; the race says which fixed depth
is best at its budget and claims a growth speedup only where depth pays."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_race_ties import _spec, _study

from growcockpit.plan import load_plan
from growcockpit.race import build_race
from growcockpit.race.candidates import plan_flops
from growcockpit.race.depth_controls import race_gate
from growcockpit.race.report import format_result, race_result

PLAN = Path(__file__).with_name("tiny-race.toml")


def test_a_race_adds_depth_one_and_half_depth_at_every_lr_at_equal_compute(
    tmp_path: Path,
) -> None:
    spec = build_race([PLAN], ["optim.lr=1e-3,3e-3"], [0, 1], tmp_path, budget_fraction=0.5)
    controls = [c for c in spec.candidates if c.depth]
    assert [(c.depth, c.sets) for c in controls] == [
        (1, ["optim.lr=1e-3"]),
        (2, ["optim.lr=1e-3"]),
        (1, ["optim.lr=3e-3"]),
        (2, ["optim.lr=3e-3"]),
    ]
    assert spec.depth_controls and not any(c.baseline for c in controls)
    for c in controls:
        plan = load_plan(c.plan_files[1])
        (stage,) = plan.stages
        assert (stage.enter, stage.train, stage.layers) == ("init", "all", c.depth)
        assert plan.model.final_layers == c.depth and plan.model.hidden_size == 32
        assert plan.seed == 1 and plan.budget is None
        one_step = plan_flops(plan) / stage.steps
        assert spec.budget_flops - one_step < plan_flops(plan) <= spec.budget_flops
    assert load_plan(controls[3].plan_files[0]).optim.lr == 3e-3


def test_no_depth_controls_leaves_them_out(tmp_path: Path) -> None:
    spec = build_race(
        [PLAN], [], [0], tmp_path, budget_fraction=0.5, depth_controls=False, short_controls=False
    )
    assert not any(c.depth for c in spec.candidates) and not spec.depth_controls


def _seeds(values: dict[str, tuple[float, ...]]):  # type: ignore[no-untyped-def]
    return lambda runs, compute: values[runs[0]]


def test_the_race_gate_picks_each_depths_best_choice_at_the_furthest_common_rung() -> None:
    arms = {
        4: [("base-lr1", ["b1"], [6.0, 5.5]), ("base-lr3", ["b3"], [5.9, 5.4])],
        1: [("d1-lr1", ["o1"], [5.5, None]), ("d1-lr3", ["o3"], [5.6, None])],
        2: [("d2-lr1", ["t1"], [5.8, 5.3])],
    }
    seeds = {"b1": (6.0,), "b3": (5.9,), "o1": (5.5,), "o3": (5.6,), "t1": (5.8,)}
    gate = race_gate([1.0, 2.0], arms, _seeds(seeds))
    assert gate is not None and gate.rung == 0  # depth 1 was cut after rung 1
    assert gate.keys == {4: "base-lr3", 1: "d1-lr1", 2: "d2-lr1"}
    assert not gate.gate.pays and gate.gate.lowest_layers == 1
    assert gate.lines() == [
        "fixed depth best at this budget: 1 layer (the best control: d1-lr1, 5.5000 at rung 1)",
        "depth does not pay at this budget: a fixed 1-layer model ends lowest; "
        "no growth speedup is claimed",
    ]
    assert race_gate([1.0], {4: arms[4]}, _seeds(seeds)) is None  # no control, no gate


def test_a_control_that_wins_claims_no_growth_speedup() -> None:
    spec = _spec(["base", "late", "depth-1"])
    spec.candidates[2] = type(spec.candidates[2])(**{**spec.candidates[2].__dict__, "depth": 1})
    rungs = {"base": [6.3, 6.1], "late": [6.0, 5.9], "depth-1": [5.8, 5.6]}
    result = race_result(spec, _study(rungs))
    assert result.winner == "depth-1"
    text = format_result(result)
    assert "depth-1 (fixed 1-layer control)" in text
    assert (
        "winner: depth-1, a fixed 1-layer control: a smaller model is the best use of this "
        "budget; no growth speedup is claimed"
    ) in text
    assert "sooner" not in text


@pytest.mark.parametrize("pays", [True, False])
def test_gate_decides_whether_a_growth_winner_claims(pays: bool) -> None:
    arms = {4: [("base", ["b"], [5.0])], 1: [("d1", ["o"], [5.5 if pays else 4.9])]}
    gate = race_gate([1.0], arms, _seeds({"b": (5.0,), "o": (5.5 if pays else 4.9,)}))
    assert gate is not None and gate.gate.pays is pays
