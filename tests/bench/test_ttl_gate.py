"""The depth gate in bench/time_to_loss.py: the controls run by default, and where a fixed
smaller model ends lowest the last line claims no growth speedup."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from repo_paths import REPO

sys.path[:0] = [
    str(REPO / "bench" / "ttl"),
    str(REPO / "bench"),
]  # the time-to-quality study, common.py

import common  # noqa: E402
import time_to_loss  # noqa: E402
import ttl_plans  # noqa: E402
from ttl_gate import against_control, bench_gate, control_methods, gated_items  # noqa: E402
from ttl_runs import first_reach  # noqa: E402

from growcockpit.plan import estimate_cost  # noqa: E402


def _res(seed: int, final: float, speed: float = 1.0) -> dict[str, Any]:
    evals = [
        {"step": s, "wall_s": s / speed, "flops": 1e9 * s / speed, "val_loss": 8 - (8 - final) * s / 100}
        for s in range(10, 101, 10)
    ]  # fmt: skip
    return {"seed": seed, "final_val_loss": final, "evals": evals}


def test_a_tiny_plan_where_depth_does_not_pay_gets_no_growth_speedup_claimed() -> None:
    runs = [
        {"baseline": _res(s, 5.0 + d), "late": _res(s, 4.7 + d), "depth-1": _res(s, 4.5 + d),
         "depth-4": _res(s, 4.8 + d)}
        for s, d in ((0, 0.0), (1, 0.01), (2, -0.01))
    ]  # fmt: skip
    gate = bench_gate(runs, 8)
    assert gate is not None and not gate.pays and gate.lowest_layers == 1
    items = ["gpt2.late_speedup_to_baseline_loss=2.63x gpt2.late_flops_speedup=3.10x "
             "gpt2.late_final_delta=-0.300",
             "gpt2.depth_1_speedup_to_baseline_loss=3.47x gpt2.depth_1_flops_speedup=3.50x"]  # fmt: skip
    out = gated_items(items, gate, "gpt2")
    assert out[:2] == ["gpt2.depth_gate=does_not_pay", "gpt2.best_fixed_depth=1"]
    assert out[2] == (
        "gpt2.late_speedup_to_baseline_loss=unclaimed(2.63x) "
        "gpt2.late_flops_speedup=unclaimed(3.10x) gpt2.late_final_delta=-0.300"
    )
    assert out[3] == items[1]  # a control's own ratio is a measurement, not a growth claim


def test_where_depth_pays_growth_is_measured_against_the_best_control() -> None:
    runs = [
        {"baseline": _res(s, 4.0), "late": _res(s, 3.9, speed=2.0), "depth-1": _res(s, 4.6),
         "depth-4": _res(s, 4.3)}
        for s in (0, 1)
    ]  # fmt: skip
    gate = bench_gate(runs, 8)
    assert gate is not None and gate.pays and gate.best_control.layers == 4
    vs = against_control(runs, "depth-4", first_reach)
    assert set(vs) == {"late"}
    # late falls (8-3.9)/100 per step at 2x the pace; depth-4's loss 4.3 is its own at step 100
    assert vs["late"]["wall"] == pytest.approx(100 / (((8 - 4.3) / (8 - 3.9)) * 100 / 2))
    items = gated_items(["gpt2.late_speedup_to_baseline_loss=2.00x"], gate, "gpt2")
    assert items == ["gpt2.depth_gate=pays", "gpt2.best_fixed_depth=8", items[2]]
    assert "unclaimed" not in items[2]


def test_the_bench_runs_depth_one_and_half_depth_by_default() -> None:
    assert control_methods(8) == ["depth-1", "depth-4"]
    args = time_to_loss.parse_args(["--methods", "baseline,late"])
    size = time_to_loss.family_size(args, "cpu", "gpt2")
    labels = [label for label, _ in time_to_loss.method_plans(args, size, 0)]
    assert labels == ["baseline", "late", "depth-1", "depth-4", "full@0.5", "full@0.25"]
    off = time_to_loss.parse_args(
        ["--methods", "baseline,late", "--no-depth-controls", "--no-short-controls"]
    )
    assert [lb for lb, _ in time_to_loss.method_plans(off, size, 0)] == ["baseline", "late"]


def test_a_depth_control_spends_the_baseline_budget_at_its_depth() -> None:
    size = common.TTL_SIZES["cpu"]["gpt2"]
    budget = ttl_plans.Budget(400, 20)
    base = estimate_cost(ttl_plans.budget_plan("baseline", size, 0, budget))
    for depth in (1, 2, 4):
        plan = ttl_plans.budget_plan(f"depth-{depth}", size, 0, budget)
        (stage,) = plan.stages
        assert (stage.layers, stage.enter, stage.train) == (depth, "init", "all")
        assert plan.model.final_layers == depth and plan.optim.schedule == "wsd"
        assert plan.total_steps % 20 == 0 and plan.total_steps > 400
        cost = estimate_cost(plan)  # the same width and head: the same cost units
        budget_units = 400 * base.baseline_step_cost
        assert budget_units - 20 * cost.baseline_step_cost < cost.total <= budget_units
    one = ttl_plans.budget_plan("depth-1", size, 0, budget)
    assert one.stages[0].name == "one-layer"  # depth-1 runs of earlier results stay reusable
    with pytest.raises(ttl_plans.MethodError, match="a control has 1 to 7 layers"):
        ttl_plans.budget_plan("depth-8", size, 0, budget)
