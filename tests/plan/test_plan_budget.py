"""`[budget]` + `fill`: the fill stage's steps fitted so the plan costs its budget."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from growcockpit.plan import (
    BudgetSpec,
    DataSpec,
    ModelSpec,
    Plan,
    PlanError,
    Stage,
    dump_plan,
    estimate_cost,
    fit_budget,
    fitted_plan,
    format_plan,
    loads_plan,
    plan_from_dict,
    plan_problems,
    plan_to_dict,
    replace_remaining_stages,
    save_plan,
    text_problems,
)
from growcockpit.plan.show import budget_lines

# GPT-2, hidden 128, FFN 512, vocab 1536: a block is 4·128² + 2·128·512 = 196 608 MACs per
# token and the head 1536·128 = 196 608, so h = 1 exactly. With r = 2 (refined cost model):
#   baseline step (4 layers, all train): 3·(4 + 1) = 15
#   "shallow" (2 layers, all + embeddings): 3·2 + 3·1 = 9
#   "grow" (2 → 4, train new, embeddings frozen): 2 + 3·2 − 1 (lowest trainable block) + 2·1 = 9
#   "all" (4 layers, all): 15
HEAD = """\
name = "budgeted"

[model]
family = "gpt2"
hidden_size = 128
num_heads = 4
intermediate_size = 512
max_seq_len = 64
final_layers = 4

[data]
tokenizer = "train:1536"
seq_len = 64
"""

STAGES = """
[[stages]]
name = "shallow"
layers = 2
steps = 10

[[stages]]
name = "grow"   # grows to full depth
enter = "stack"
layers = 4
train = "new"
steps = 10

[[stages]]
name = "all"
layers = 4
"""


def budget_text(budget: str = "baseline_steps = 20", stages: str = STAGES) -> str:
    return HEAD + "\n# the compute every method gets\n[budget]\n" + budget + "\n" + stages


def test_fit_exact_arithmetic() -> None:
    plan = loads_plan(budget_text())
    fit = fit_budget(plan)
    assert fit is not None and fit.ok
    assert fit.baseline_step_cost == pytest.approx(15.0)
    assert fit.budget_units == pytest.approx(300.0)
    assert fit.fixed_units == pytest.approx(180.0)
    assert fit.fill_step_cost == pytest.approx(15.0)
    assert (fit.fill_index, fit.fill_name, fit.fitted_steps) == (2, "all", 8)
    assert fit.baseline_steps == pytest.approx(20.0)
    assert fit.total_units == pytest.approx(300.0)
    # the loaded plan carries the fitted steps, so the total (and the LR schedule) follow it
    assert [s.steps for s in plan.stages] == [10, 10, 8]
    assert plan.total_steps == 28
    assert estimate_cost(plan).total == pytest.approx(300.0)


def test_fit_floors_to_stay_within_budget() -> None:
    # fixed 10·9 + 11·9 = 189; (300 − 189) / 15 = 7.4 → 7 steps, 294 units
    plan = loads_plan(
        budget_text(
            stages=STAGES.replace(
                'steps = 10\n\n[[stages]]\nname = "all"', 'steps = 11\n\n[[stages]]\nname = "all"'
            )
        )
    )
    fit = fit_budget(plan)
    assert fit is not None and fit.fitted_steps == 7
    assert fit.total_units == pytest.approx(294.0)


def test_fill_on_a_middle_stage() -> None:
    stages = STAGES.replace('train = "new"\nsteps = 10', 'train = "new"\nfill = true').replace(
        'name = "all"\nlayers = 4', 'name = "all"\nlayers = 4\nsteps = 2'
    )
    plan = loads_plan(budget_text(stages=stages))
    # fixed: 10·9 + 2·15 = 120; (300 − 120) / 9 = 20
    assert [s.steps for s in plan.stages] == [10, 20, 2]


def test_minutes_budget_through_unit_ms() -> None:
    # 1 minute at 200 ms per unit = 300 units, as 20 baseline steps
    plan = loads_plan(budget_text("minutes = 1\nunit_ms = 200"))
    fit = fit_budget(plan)
    assert fit is not None and fit.fitted_steps == 8
    assert fit.minutes == pytest.approx(1.0)
    assert fit.baseline_steps == pytest.approx(20.0)
    # a caller (the benchmark) may pass its own calibration
    assert fit_budget(plan, unit_ms=100.0).fitted_steps == 28  # type: ignore[union-attr]


def test_budget_that_cannot_be_met_names_stages_and_shortfall() -> None:
    problems = text_problems(budget_text("baseline_steps = 10"))
    assert len(problems) == 1
    err = problems[0]
    assert err.key == "budget.baseline_steps"
    # fixed 180 units = 12 baseline steps, + one fill step (1) = 13 > 10 by 3
    assert '"shallow" (6.0), "grow" (6.0)' in err.problem
    assert "3.0 baseline steps more than the budget" in err.problem
    assert "≥ 13 baseline steps" in err.problem
    assert err.line is not None  # located at the key in the file
    with pytest.raises(PlanError, match="cannot be met"):
        loads_plan(budget_text("baseline_steps = 10"))


@pytest.mark.parametrize(
    ("budget", "key", "needle"),
    [
        ("baseline_steps = 20\nminutes = 3", "budget", "both of baseline_steps and minutes"),
        ("unit_ms = 3.0", "budget", "neither of baseline_steps and minutes"),
        ("minutes = 3", "budget.minutes", "needs unit_ms"),
        ("baseline_steps = 0", "budget.baseline_steps", "must be ≥ 1"),
        ("minutes = 3\nunit_ms = -1.0", "budget.unit_ms", "must be > 0"),
        ("baseline_steps = 20\nsteps = 3", "budget.steps", "unknown key"),
        ("minutes = 1e300\nunit_ms = 1e-300", "budget.minutes", "is too large"),
        ("baseline_steps = 999999999999999999", "budget.baseline_steps", "is too large"),
    ],
)
def test_budget_table_errors(budget: str, key: str, needle: str) -> None:
    problems = text_problems(budget_text(budget))
    assert problems, budget
    assert problems[0].key == key
    assert needle in problems[0].problem


def test_fill_errors() -> None:
    two = STAGES.replace('train = "new"\n', 'train = "new"\nfill = true\n').replace(
        'name = "all"\nlayers = 4', 'name = "all"\nlayers = 4\nfill = true'
    )
    problems = text_problems(budget_text(stages=two))
    assert [p.key for p in problems] == ["stages[2].fill"]
    assert "only one stage can fill" in problems[0].problem
    no_budget = HEAD + STAGES.replace(
        'name = "all"\nlayers = 4', 'name = "all"\nlayers = 4\nfill = true\nsteps = 5'
    )
    problems = text_problems(no_budget)
    assert [p.key for p in problems] == ["stages[2].fill"]
    assert "add [budget]" in problems[0].problem
    # without a budget every stage still needs steps
    problems = text_problems(HEAD + STAGES)
    assert [p.key for p in problems] == ["stages[2].steps"]


def test_written_steps_on_the_fill_stage_follow_the_budget() -> None:
    plan = loads_plan(
        budget_text(
            stages=STAGES.replace(
                'name = "all"\nlayers = 4', 'name = "all"\nlayers = 4\nsteps = 999'
            )
        )
    )
    assert plan.stages[2].steps == 8


def test_save_keeps_budget_and_fill_as_written(tmp_path: Path) -> None:
    text = budget_text(
        stages=STAGES.replace('name = "all"\nlayers = 4', 'name = "all"\nlayers = 4\nfill = true')
    )
    plan = loads_plan(text)
    assert plan.stages[2].steps == 8
    plan.stages[1].steps = 5  # an edit; the fill stage is refitted by whoever edits (designer)
    plan = fitted_plan(plan)
    assert plan.stages[2].steps == 11  # (300 − 90 − 45) / 15
    path = tmp_path / "p.toml"
    save_plan(plan, path, original_text=text)
    saved = path.read_text()
    assert "# the compute every method gets" in saved and "# grows to full depth" in saved
    assert "[budget]\nbaseline_steps = 20" in saved
    assert "fill = true" in saved
    assert "steps = 11" not in saved  # the fitted number is not baked in
    assert loads_plan(saved) == plan
    fresh = dump_plan(plan)
    assert "[budget]" in fresh and "fill = true" in fresh and "steps = 11" not in fresh
    assert loads_plan(fresh) == plan


def test_save_removes_budget_and_writes_steps_when_budget_dropped(tmp_path: Path) -> None:
    text = budget_text()
    plan = dataclasses.replace(loads_plan(text), budget=None)
    path = tmp_path / "p.toml"
    save_plan(plan, path, original_text=text)
    saved = path.read_text()
    assert "[budget]" not in saved
    assert loads_plan(saved).stages[2].steps == 8


def test_dict_round_trip_refits() -> None:
    plan = loads_plan(budget_text())
    data = plan_to_dict(plan)
    assert data["budget"] == {"baseline_steps": 20}
    assert data["stages"][2]["steps"] == 8  # readers of the event see the fitted number
    assert plan_from_dict(data) == plan
    assert "budget" not in plan_to_dict(dataclasses.replace(plan, budget=None))


def test_edit_stages_refits_the_fill_stage() -> None:
    plan = loads_plan(budget_text())
    grow = dataclasses.replace(plan.stages[1], steps=0 + 15)
    edited = replace_remaining_stages(plan, 1, [grow, plan.stages[2]])
    assert [s.steps for s in edited.stages] == [10, 15, 5]  # (300 − 90 − 135) / 15
    with pytest.raises(PlanError, match="cannot be met"):
        replace_remaining_stages(plan, 1, [dataclasses.replace(grow, steps=30), plan.stages[2]])


def test_show_and_budget_lines() -> None:
    plan = loads_plan(budget_text())
    lines = budget_lines(plan)
    assert lines[0].startswith("budget: 20 baseline steps = 300 cost units")
    assert 'stage 3 "all" fitted to 8 steps' in lines[1]  # numbered from 1
    text = format_plan(plan)
    assert "8*" in text and "*: fitted to the budget" in text
    assert "budget: 20 baseline steps" in text
    assert budget_lines(dataclasses.replace(plan, budget=None)) == []


@pytest.mark.heavy_deps  # the backend's schedule (torch)
def test_lr_schedule_follows_the_fitted_total() -> None:
    from growcockpit.backend.loop.optim import lr_at

    text = budget_text().replace("[budget]", '[optim]\nschedule = "linear"\nlr = 1.0\n\n[budget]')
    plan = loads_plan(text)
    assert plan.total_steps == 28
    last = plan.total_steps - 1
    assert lr_at(plan, 2, 7, last) == pytest.approx(1.0 - 0.9 * last / 28)


MODEL = ModelSpec(
    family="gpt2", hidden_size=128, num_heads=4, intermediate_size=512, final_layers=8
)


@settings(max_examples=100, deadline=None)
@given(
    shallow=st.integers(1, 7),
    steps=st.lists(st.integers(1, 500), min_size=2, max_size=2),
    train=st.sampled_from(["all", "new", "top:1"]),
    budget=st.integers(1, 3000),
    fill=st.integers(0, 2),
)
def test_fitted_cost_within_one_step_of_budget(
    shallow: int, steps: list[int], train: str, budget: int, fill: int
) -> None:
    stages = [
        Stage("a", shallow, steps[0], enter="init"),
        Stage("b", 8, steps[1], enter="stack", train=train),
        Stage("c", 8, 1),
    ]
    stages[fill].fill = True
    plan = Plan(
        name="p",
        model=MODEL,
        data=DataSpec(tokenizer="train:4000", seq_len=64),
        stages=stages,
        budget=BudgetSpec(baseline_steps=budget),
    )
    fit = fit_budget(plan)
    assert fit is not None
    if fit.ok:
        fitted = fitted_plan(plan)
        total = estimate_cost(fitted).total
        assert fitted.stages[fill].steps == fit.fitted_steps >= 1
        assert fit.budget_units - total + 1e-6 >= 0
        assert fit.budget_units - total < fit.fill_step_cost + 1e-6
        assert plan_problems(fitted) == []
    else:
        assert fit.fixed_units + fit.fill_step_cost > fit.budget_units - 1e-6
        assert [p.key for p in plan_problems(plan)] == ["budget.baseline_steps"]


def test_calibrated_unit_ms_prices_the_full_depth_step() -> None:
    """`plan show --calibrate`'s unit_ms: the calibrated full-depth step time over its units."""
    from growcockpit.cli.plans import unit_ms

    plan = loads_plan(budget_text())  # r = 2, h = 1 exactly: a step is 3·(4 + 1) = 15 units
    assert unit_ms(plan, {"r": 2.0, "h": 1.0, "block_fwd_ms": 0.5}) == pytest.approx(0.5)
    # a machine whose backward is relatively slower (r = 3): 4·5·0.5 = 10 ms per 15 units
    assert unit_ms(plan, {"r": 3.0, "h": 1.0, "block_fwd_ms": 0.5}) == pytest.approx(10 / 15)
