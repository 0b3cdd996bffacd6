"""bench/hops_plans/: the recipes of bench/results/hops_cpu.md stay valid plans that grow
GPT-2 to the baseline's 4 layers on `task:hops` and spend the baseline's budget."""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_paths import REPO

from growcockpit.plan import load_plan
from growcockpit.plan.flops import flops_through_step

PLANS = sorted((REPO / "bench" / "hops_plans").glob("*.toml"))
BASELINE = REPO / "sample_plans" / "cpu-hops-baseline.toml"


def test_there_are_plans() -> None:
    assert {p.stem for p in PLANS} >= {"hops-stack124", "hops-mslt", "hops-middle", "hops-vcycle"}


@pytest.mark.parametrize("path", PLANS, ids=lambda p: p.stem)
def test_plan_validates_and_fits_the_budget(path: Path) -> None:
    plan = load_plan(path)
    base = load_plan(BASELINE)
    assert plan.data.source == "task:hops"
    assert plan.stages[-1].layers == 4
    total = flops_through_step(plan, sum(s.steps for s in plan.stages))
    budget = flops_through_step(base, sum(s.steps for s in base.stages))
    assert total == pytest.approx(budget, rel=0.01)
