"""The full model on shorter schedules in bench/time_to_loss.py: the plans (`full@0.5`:
half the steps, its schedule completed, warm-up kept), and the claims: a growth method
that beats only the long baseline's curve gets no speedup claimed; an undecided gate
(a control that did not finish) marks every speedup unclaimed."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from repo_paths import REPO

sys.path[:0] = [str(REPO / "bench" / "ttl"), str(REPO / "bench")]

import common  # noqa: E402
import time_to_loss  # noqa: E402
import ttl_plans  # noqa: E402
from ttl_claims import bench_claims, claimed_items  # noqa: E402
from ttl_gate import bench_gate, gated_items  # noqa: E402

from growcockpit.plan.schedule import lr_curve  # noqa: E402


def test_full_at_half_trains_the_baseline_model_for_half_the_steps_with_its_own_decay() -> None:
    size = common.TTL_SIZES["cpu"]["gpt2"]
    budget = ttl_plans.Budget(400, 20)
    base = ttl_plans.budget_plan("baseline", size, 0, budget)
    half = ttl_plans.budget_plan("full@0.5", size, 0, budget, "wsd")
    quarter = ttl_plans.budget_plan("full@0.25", size, 0, budget)
    assert half.model == base.model and half.total_steps == 200 and quarter.total_steps == 100
    assert half.optim.schedule == "wsd" and quarter.optim.schedule == "linear"
    assert half.optim.warmup_steps == base.optim.warmup_steps  # the warm-up is kept
    # the decay ends at its own last step, not the long baseline's
    curve = lr_curve(half)
    assert len(curve) == 200 and curve[-1] < 0.05 * half.optim.lr and max(curve) == half.optim.lr
    assert half.name == "bench-gpt2-full-0.5"
    with pytest.raises(ttl_plans.MethodError, match="leave no evaluation"):
        ttl_plans.budget_plan("full@0.01", size, 0, budget)


def _res(seed: int, values: list[float], flops_per_eval: float = 1.0) -> dict[str, Any]:
    evals = [
        {"step": 10 * (i + 1), "wall_s": (i + 1) * flops_per_eval, "flops": (i + 1) * flops_per_eval, "val_loss": v}
        for i, v in enumerate(values)
    ]  # fmt: skip
    return {"seed": seed, "evals": evals, "status": "completed", "rc": 0,
            "final_val_loss": values[-1]}  # fmt: skip


LONG = [6, 5.5, 5, 4.5, 4.2, 4.0, 3.6, 3.4, 3.2, 3.0]  # reaches its final 3.0 at 10
HALF = [6, 5, 4, 3.5, 2.98]  # full@0.5 decayed at its own end: below 3.0 at 5
GROWN = [5.5, 5, 4.4, 4.0, 3.5, 3.2, 2.95, 2.9, 2.85, 2.8]  # 3.0 at ≈ 6.8: 1.5× the long curve


def _runs(half: list[float] = HALF, depth1_done: bool = True) -> list[dict[str, dict[str, Any]]]:
    runs = []
    for s in range(3):
        one = _res(s, [6, 5, 4.5, 4.0, 3.9, 3.8, 3.7, 3.6, 3.5, 3.4])
        if not depth1_done:
            one = {**one, "status": "missing", "rc": -9}
            del one["final_val_loss"]
        runs.append({"baseline": _res(s, LONG), "late": _res(s, GROWN), "full@0.5": _res(s, half),
                     "depth-1": one, "depth-2": _res(s, [6, 5, 4.4, 4.0, 3.8, 3.7, 3.6, 3.5, 3.4, 3.3])})  # fmt: skip
    return runs


ITEMS = ["gpt2.late_speedup_to_baseline_loss=1.47x gpt2.late_flops_speedup=1.47x "
         "gpt2.late_final_delta=-0.200"]  # fmt: skip
NEEDED = ("depth-1", "depth-2", "full@0.5")


def test_growth_that_beats_only_the_long_curve_gets_no_speedup_claimed() -> None:
    runs = _runs()
    gate = bench_gate(runs, 4, (1, 2))
    assert gate is not None and gate.pays
    claims = bench_claims(runs, gate, needed=NEEDED)
    assert claims["late"].status == "unclaimed" and claims["late"].winner == "full@0.5"
    assert claims["late"].text.startswith(
        "The full model trained for half the budget (full@0.5) reaches val loss 3.000 sooner"
    )
    assert claims["late"].text.endswith("no growth speedup is claimed")
    out = claimed_items(gated_items(ITEMS, gate, "gpt2"), claims, "gpt2")
    assert out[2].startswith("gpt2.late_speedup_to_baseline_loss=unclaimed(1.47x)")
    assert "gpt2.late_flops_speedup=unclaimed(1.47x)" in out[2]
    assert out[-1] == "gpt2.late_claim=unclaimed"


def test_where_the_short_schedule_is_slower_the_envelope_is_the_long_curve_and_growth_is_claimed() -> (
    None
):
    runs = _runs(half=[6, 5.2, 4.6, 4.2, 3.9])  # full@0.5 never reaches 3.0
    gate = bench_gate(runs, 4, (1, 2))
    claims = bench_claims(runs, gate, needed=NEEDED)
    assert claims["late"].claimed, claims["late"].text
    out = claimed_items(gated_items(ITEMS, gate, "gpt2"), claims, "gpt2")
    assert "gpt2.late_speedup_to_baseline_loss=1.47x" in out[2]
    assert out[-1] == "gpt2.late_claim=claimed"


def test_a_control_that_did_not_finish_leaves_the_gate_undecided_and_every_speedup_unclaimed() -> (
    None
):
    runs = _runs(half=[6, 5.2, 4.6, 4.2, 3.9], depth1_done=False)
    gate = bench_gate(runs, 4, (1, 2))
    assert gate is not None and gate.status == "undecided" and not gate.pays
    items = gated_items(ITEMS, gate, "gpt2")
    assert items[0] == "gpt2.depth_gate=undecided"
    assert "unclaimed(1.47x)" in items[1]
    claims = bench_claims(runs, gate, needed=NEEDED)
    assert claims["late"].status == "undecided" and "depth-1" in claims["late"].text
    # no control at all finished: undecided, not "no gate" (the growth ratio unmarked)
    bare = [{"baseline": r["baseline"], "late": r["late"]} for r in runs]
    none = bench_gate(bare, 4, (1, 2))
    assert none is not None and none.undecided
    assert "unclaimed(" in gated_items(ITEMS, none, "gpt2")[1]


def test_one_seed_ahead_of_every_control_is_not_a_result() -> None:
    runs = _runs(half=[6, 5.2, 4.6, 4.2, 3.9])[:1]
    claims = bench_claims(runs, bench_gate(runs, 4, (1, 2)), needed=NEEDED)
    assert claims["late"].status == "unclaimed" and "one seed: not a result" in claims["late"].text


def test_an_accuracy_target_from_the_command_line() -> None:
    assert time_to_loss.main(["--target-accuracy", "95", "--family", "gpt2"]) == 2
    runs = _runs(half=[6, 5.2, 4.6, 4.2, 3.9])
    for run in runs:
        for res in run.values():
            for i, e in enumerate(res["evals"]):
                e["accuracy"] = min(1.0, 0.3 + 0.07 * i * (1.5 if res is run["late"] else 1.0))
    claims = bench_claims(runs, bench_gate(runs, 4, (1, 2)), "accuracy", 0.95, NEEDED)
    assert claims["late"].target.metric == "accuracy" and "95 % accuracy" in claims["late"].text
    assert claims["late"].claimed, claims["late"].text
