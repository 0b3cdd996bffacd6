"""Building a race: plans × variations, the full-depth baseline at the same choices, rungs."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from growcockpit.plan import estimate_cost, load_plan
from growcockpit.race import RaceError, RaceSpec, build_race
from growcockpit.race.candidates import parse_vary, plan_flops

PLAN = Path(__file__).with_name("tiny-race.toml")


def test_plans_times_variations_plus_the_baseline_at_the_same_lrs(tmp_path: Path) -> None:
    spec = build_race(
        [PLAN],
        ["optim.lr=1e-3,3e-3", "stages.0.steps=4,8"],
        [0, 1],
        tmp_path,
        budget_fraction=0.25,
        depth_controls=False,
        short_controls=False,
    )
    keys = [c.key for c in spec.candidates]
    assert len(keys) == 4 + 2 and len(set(keys)) == 6  # 2 × 2 growth plans, 2 baselines
    bases = [c for c in spec.candidates if c.baseline]
    assert [c.sets for c in bases] == [["optim.lr=1e-3"], ["optim.lr=3e-3"]]  # no stage keys
    for c in spec.candidates:
        assert len(c.plan_files) == len(c.runs) == 2
        for seed, path in zip([0, 1], c.plan_files, strict=True):
            plan = load_plan(path)  # every candidate is an ordinary, valid plan file
            assert plan.seed == seed
    grown = load_plan(spec.candidates[1].plan_files[0])
    assert grown.optim.lr == 1e-3 and grown.stages[0].steps == 8
    base = load_plan(bases[1].plan_files[0])
    assert len(base.stages) == 1 and base.stages[0].layers == 4 and base.optim.lr == 3e-3
    # the baseline costs what the first plan costs (to a step), so the budget is shared
    first = load_plan(spec.candidates[0].plan_files[0])
    cost = estimate_cost(base)
    assert abs(cost.total - estimate_cost(first).total) <= cost.baseline_step_cost
    assert spec.budget_flops == pytest.approx(plan_flops(first))
    assert len(spec.rungs) == 2 and spec.rungs[-1] == pytest.approx(0.25 * spec.budget_flops)
    assert spec.rungs[0] == pytest.approx(spec.rungs[1] / 2)
    assert RaceSpec.from_json(spec.to_json()) == spec


def test_a_full_depth_plan_given_is_the_baseline(tmp_path: Path) -> None:
    text = PLAN.read_text()
    cut = text.index("[[stages]]")
    full = tmp_path / "full.toml"
    full.write_text(text[:cut] + '[[stages]]\nname = "all"\nlayers = 4\nsteps = 8\n')
    spec = build_race(
        [PLAN, full],
        [],
        [0],
        tmp_path / "race",
        budget_fraction=0.5,
        depth_controls=False,
        short_controls=False,
    )
    # no second baseline; the same plan name twice gets two keys
    assert [(c.key, c.baseline) for c in spec.candidates] == [
        ("tiny-race-0", False),
        ("tiny-race-1", True),
    ]


def test_errors_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(RaceError, match='unknown key "lrr"; did you mean "lr"'):
        build_race([PLAN], ["optim.lrr=1,2"], [0], tmp_path, budget_fraction=0.1)
    with pytest.raises(RaceError, match="expected KEY=V1,V2"):
        parse_vary("optim.lr")
    with pytest.raises(RaceError, match=r"--vary stages.1.steps=0: stages\[1\].steps: must be ≥ 1"):
        build_race([PLAN], ["stages.1.steps=0,2"], [0], tmp_path, budget_fraction=0.1)
    with pytest.raises(RaceError, match="budget-fraction"):
        build_race([PLAN], [], [0], tmp_path, budget_fraction=1.5)
    with pytest.raises(RaceError, match="nothing to race"):
        build_race(
            [PLAN],
            [],
            [0],
            tmp_path,
            budget_fraction=0.1,
            keep=2,
            depth_controls=False,
            short_controls=False,
        )
    assert tomllib.loads(PLAN.read_text())["metrics"]["eval_every_steps"] == 2


def test_candidates_measuring_another_loss_are_refused(tmp_path: Path) -> None:
    """A rung ranks losses: a candidate at another sequence length or vocab scores another
    quantity, so the race refuses it rather than cut by it."""
    with pytest.raises(RaceError, match=r"sequence length 16 vs 32.*race the others separately"):
        build_race([PLAN], ["data.seq_len=32,16"], [0], tmp_path, budget_fraction=0.1)
    with pytest.raises(RaceError, match="vocab 500 vs 2000"):
        build_race(
            [PLAN], ["data.tokenizer=train:2000,train:500"], [0], tmp_path, budget_fraction=0.1
        )
    build_race([PLAN], ["optim.batch_size=4,8"], [0], tmp_path, budget_fraction=0.1, write=False)
