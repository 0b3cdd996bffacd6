"""`race --control`: how a growth plan's control is derived, and how the race reports it."""

from __future__ import annotations

from pathlib import Path

import pytest

from growcockpit.plan import estimate_cost, load_plan, plan_from_dict, plan_problems
from growcockpit.plan.types import Stage, trainable_layer_ids
from growcockpit.race import build_race
from growcockpit.race.control import TrainableSet, control_tables, last_growth_set
from growcockpit.race.report import RaceResult, Row, control_lines

PLAN = Path(__file__).with_name("tiny-race.toml")
SAMPLES = Path(__file__).parents[2] / "sample_plans"


def _tables(path: Path) -> dict[str, object]:
    import tomllib

    return tomllib.loads(path.read_text())


def test_the_control_trains_the_last_growth_stages_set_at_full_depth_for_the_same_cost(
    tmp_path: Path,
) -> None:
    spec = build_race([PLAN], ["optim.lr=1e-3,3e-3"], [0], tmp_path, budget_fraction=0.5,
                      control=True, depth_controls=False, short_controls=False)  # fmt: skip
    kinds = [(c.baseline, c.control) for c in spec.candidates]
    assert kinds == [(False, False)] * 2 + [(True, False)] * 2 + [(False, True)] * 2
    grown, ctls = spec.candidates[:2], spec.candidates[4:]
    assert [c.controls for c in ctls] == [[grown[0].key], [grown[1].key]]
    assert [c.sets for c in ctls] == [["optim.lr=1e-3"], ["optim.lr=3e-3"]]
    plan, ctl = load_plan(grown[1].plan_files[0]), load_plan(ctls[1].plan_files[0])
    (stage,) = ctl.stages
    # tiny-race grows 2 → 4 with train = "new": the control trains layers 2, 3 from the start
    assert (stage.enter, stage.layers, stage.train) == ("init", 4, "top:2")
    assert trainable_layer_ids(stage, 0) == [2, 3]
    assert not stage.embeddings_trainable() and stage.head_trainable()
    assert ctl.optim.lr == 3e-3 and ctl.model == plan.model
    cost = estimate_cost(ctl)
    assert abs(cost.total - estimate_cost(plan).total) <= cost.stages[0].step_cost


def test_a_middle_stack_control_trains_the_inserted_indices_fitted_to_the_budget() -> None:
    path = SAMPLES / "cpu-gpt2-middle.toml"
    plan = load_plan(path)
    assert last_growth_set(plan) == TrainableSet(8, (4, 5), True, True)
    tables = control_tables(_tables(path), plan)
    assert tables is not None
    ctl = plan_from_dict(tables)
    assert plan_problems(ctl) == []
    (stage,) = ctl.stages
    assert stage.train == "layers:4,5" and stage.embeddings == "train" and stage.fill
    # both fitted to the same [budget]
    assert estimate_cost(ctl).total == pytest.approx(estimate_cost(plan).total, rel=0.02)


def test_no_control_for_a_growth_that_trains_everything_or_for_a_baseline(tmp_path: Path) -> None:
    zero = SAMPLES / "cpu-gpt2-zero.toml"
    assert control_tables(_tables(zero), load_plan(zero)) is None  # it would be the baseline
    assert last_growth_set(load_plan(SAMPLES / "cpu-baseline.toml")) is None
    spec = build_race([zero], [], [0], tmp_path, budget_fraction=0.5, control=True, write=False)
    assert not any(c.control for c in spec.candidates)


def test_equal_controls_are_one_candidate_controlling_both(tmp_path: Path) -> None:
    spec = build_race([PLAN], ["stages.1.source=top,random"], [0], tmp_path,
                      budget_fraction=0.5, control=True, depth_controls=False,
            short_controls=False,
                      write=False)  # fmt: skip
    ctls = [c for c in spec.candidates if c.control]
    assert len(ctls) == 1 and ctls[0].controls == [c.key for c in spec.candidates[:2]]
    assert ctls[0].sets == []


@pytest.mark.parametrize(
    ("train", "message"),
    [("layers:2,9", "give layer indices 0 … 3"), ("layers:a", "give layer indices")],
)
def test_layers_policy_is_checked(train: str, message: str) -> None:
    plan = load_plan(PLAN)
    plan.stages[1] = Stage(**{**plan.stages[1].__dict__, "train": train})
    problems = plan_problems(plan)
    assert len(problems) == 1 and message in problems[0].problem and "\n" not in str(problems[0])
    assert problems[0].key == "stages[1].train"


def _row(key: str, losses: list[float | None], controls: list[str] | None = None) -> Row:
    return Row(key, False, [], losses, 1.0, 1.0, None, "racing", None, [], controls)


def test_the_report_says_whether_the_growth_or_the_trainable_set_paid() -> None:
    rows = [_row("grow", [3.0, 2.5]), _row("grow-control", [3.1, 2.7], ["grow"])]
    result = RaceResult([1.0, 2.0], 10.0, rows, 2.0, "grow", None)
    (line,) = control_lines(result)
    assert "2.7000 vs the winner's 2.5000 at rung 2: the growth pays" in line
    rows[1] = _row("grow-control", [2.9, None], ["grow"])  # cut after rung 1, but better there
    result = RaceResult([1.0, 2.0], 10.0, rows, 2.0, "grow", None)
    assert "at rung 1: the reduced trainable set explains it" in control_lines(result)[0]
    assert control_lines(RaceResult([1.0, 2.0], 10.0, rows, 2.0, "grow-control", None)) == []
