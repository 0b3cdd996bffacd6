"""bench/ttl/ttl_sweep.py: every method at each peak LR, compared at its own best (pure logic)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest
from repo_paths import REPO

sys.path[:0] = [
    str(REPO / "bench" / "ttl"),
    str(REPO / "bench"),
]  # the time-to-quality study, common.py

import ttl_sweep  # noqa: E402

from growcockpit.plan import load_plan  # noqa: E402


def test_with_lr_scales_stage_lrs_and_keeps_the_plan_at_its_own_lr() -> None:
    plan = load_plan(REPO / "sample_plans" / "cpu-gpt2-vcycle-long.toml")
    assert plan.optim.lr == pytest.approx(1e-3)
    coarse = [s.lr for s in plan.stages]
    assert ttl_sweep.with_lr(plan, 1e-3) == plan  # reused runs stay equal
    hot = ttl_sweep.with_lr(plan, 3e-3)
    assert hot.optim.lr == pytest.approx(3e-3)
    for before, after in zip(coarse, (s.lr for s in hot.stages), strict=True):
        assert (before is None and after is None) or after == pytest.approx(3 * before)
    assert ttl_sweep.lr_label("plan-x", 1e-3, 0.001) == "plan-x"
    assert ttl_sweep.lr_label("plan-x", 3e-3, 0.001) == "plan-x@lr0.003"


def test_parse_lrs() -> None:
    assert ttl_sweep.parse_lrs("3e-3, 1e-3,1e-3,") == [1e-3, 3e-3]
    for bad, why in (("x", "not a number"), ("2", "not a peak LR"), (",", "no LR")):
        with pytest.raises(ValueError, match=why):
            ttl_sweep.parse_lrs(bad)


def _res(final: float) -> dict[str, Any]:
    return {"evals": [{"step": 10, "val_loss": final}]}


def test_pick_best_takes_the_lowest_median_and_never_a_diverged_lr() -> None:
    V = ttl_sweep.Variant
    variants = [V("baseline", 1e-3, "baseline"), V("baseline", 3e-3, "baseline@lr0.003")]
    variants += [V("grow", 1e-3, "grow"), V("grow", 4e-3, "grow@lr0.004")]
    results = {
        ("baseline", 0): _res(5.2),
        ("baseline", 1): _res(5.1),
        ("baseline", 2): _res(5.3),
        ("baseline@lr0.003", 0): _res(5.0),
        ("baseline@lr0.003", 1): _res(5.4),
        ("baseline@lr0.003", 2): _res(5.05),  # median 5.05 < 5.2
        ("grow", 0): _res(5.1),
        ("grow", 1): _res(5.1),
        ("grow@lr0.004", 0): _res(math.nan),  # diverged: median inf
        ("grow@lr0.004", 1): _res(4.0),
    }
    best, table = ttl_sweep.pick_best(variants, results, [0, 1, 2])
    assert best["baseline"].label == "baseline@lr0.003" and table["baseline"]["best_lr"] == 3e-3
    assert table["baseline"]["lrs"] == {"0.001": 5.2, "0.003": 5.05}
    assert best["grow"].label == "grow"
    assert table["grow"]["lrs"]["0.004"] is None  # median of (inf, 4.0) is inf
    runs = ttl_sweep.runs_at_best(best, results, [0, 1, 2])
    assert runs[0]["baseline"]["lr"] == 3e-3 and runs[0]["baseline"]["evals"][-1]["val_loss"] == 5.0
    assert "grow" not in runs[2]
    lines = ttl_sweep.sweep_table(table)
    assert "lr 0.001" in lines[0] and "5.050*" in lines[2] and "5.100*" in lines[3]
    md = "\n".join(ttl_sweep.sweep_markdown(table, "gpt2"))
    assert "| baseline | 5.200 | **5.050** |" in md and "| grow | **5.100** | - |" in md


def test_tuned_baseline_is_the_best_schedule() -> None:
    V = ttl_sweep.Variant
    lin, wsd = V("baseline", 3e-3, "baseline"), V("baseline-wsd", 3e-3, "baseline-wsd")
    grow = V("late", 3e-3, "late")
    best = {"baseline": lin, "baseline-wsd": wsd, "late": grow}

    def table(a: float, b: float) -> dict[str, dict[str, Any]]:
        rows = {"baseline": a, "baseline-wsd": b, "late": 4.9}
        return {m: {"lrs": {"0.003": v}, "best_lr": 3e-3} for m, v in rows.items()}

    out, winner = ttl_sweep.tuned_baseline(best, table(5.0, 4.95), ("baseline-wsd",))
    assert winner == "baseline-wsd" and out["baseline"] is wsd and out["baseline-linear"] is lin
    assert set(out) == {"baseline", "baseline-linear", "late"}
    out, winner = ttl_sweep.tuned_baseline(best, table(5.0, 5.1), ("baseline-wsd",))
    assert winner == "baseline" and out == best
    assert ttl_sweep.tuned_baseline(best, table(5.0, 4.0), ())[0] == best


def test_late_method_plan_and_the_head_bound() -> None:
    from common import TTL_SIZES
    from ttl_flops import head_bound
    from ttl_plans import Budget, MethodError, budget_plan

    from growcockpit.plan import estimate_cost
    from growcockpit.plan.flops import flops_through_step as cumulative
    from growcockpit.plan.schedule import decay_start

    size = TTL_SIZES["cpu"]["gpt2"]
    budget = Budget(400, 20)
    plan = budget_plan("late", size, 0, budget)
    one, full = plan.stages
    assert (one.layers, full.layers, full.enter, full.init) == (1, 8, "stack", "zero")
    assert plan.optim.schedule == "wsd" and plan.optim.optimizer_reset
    cost = estimate_cost(plan)
    share = cost.stages[0].total / (400 * cost.baseline_step_cost)
    assert 0.78 < share < 0.82  # the expansion at ≈ 80 % of the budget
    assert 0.95 < cost.total / (400 * cost.baseline_step_cost) <= 1.0
    assert decay_start(plan) == pytest.approx(one.steps, abs=1)  # decay = the full-depth stage
    variant = budget_plan("late-0.7-copy-carry", size, 0, budget)
    assert variant.stages[1].init == "copy" and not variant.optim.optimizer_reset
    assert variant.stages[0].steps < one.steps
    with pytest.raises(MethodError, match="unknown method"):
        budget_plan("late-2", size, 0, budget)
    assert budget_plan("baseline-wsd", size, 0, budget).optim.schedule == "wsd"
    control = budget_plan("depth-1", size, 0, budget)  # 1 layer for the whole budget
    assert control.model.final_layers == 1 and control.total_steps % 20 == 0
    assert 0.95 < estimate_cost(control).total / (400 * cost.baseline_step_cost) <= 1.0
    base = budget_plan("baseline", size, 0, budget)
    bound = head_bound(base)
    # bench FLOPs count attention scores as block work, so h is a little under the cost
    # model's 2.6 blocks: a 1-layer step is about a third of a full one
    assert 2.0 < bound["head_blocks"] < 2.7 and 0.3 < bound["one_layer_step"] < 0.36
    assert bound["bound_depth1"] == pytest.approx(1 / bound["one_layer_step"])
    assert cumulative(base, 400) == pytest.approx(400 * cumulative(base, 1))
    assert cumulative(plan, 400, head=False) < cumulative(plan, 400)


def test_wsd_only_baseline_schedule_trains_no_linear_baseline() -> None:
    import time_to_loss
    from common import TTL_SIZES

    size = TTL_SIZES["cpu"]["gpt2"]
    args = time_to_loss.parse_args(["--methods", "late", "--baseline-schedules", "wsd"])
    plans = dict(time_to_loss.method_plans(args, size, 0))
    # no linear, no baseline-wsd; the full model's short schedules complete WSD too
    assert set(plans) == {"baseline", "late", "depth-1", "depth-4", "full@0.5", "full@0.25"}
    assert plans["baseline"].optim.schedule == "wsd"
    assert {plans[f"full@{f}"].optim.schedule for f in ("0.5", "0.25")} == {"wsd"}
    assert time_to_loss.baseline_rivals(args) == () and time_to_loss.wsd_only(args)
    both = time_to_loss.parse_args(["--methods", "late", "--baseline-schedules", "linear,wsd"])
    plans = dict(time_to_loss.method_plans(both, size, 0))
    assert plans["baseline"].optim.schedule == "linear" and "baseline-wsd" in plans
    assert not time_to_loss.wsd_only(both)


def test_ttl_merge_reads_seeds_of_two_files_side_by_side(tmp_path: Path) -> None:
    import json

    import ttl_merge

    src = REPO / "bench/results/time_to_loss-gpt2-late-wsd-2seeds-cpu-2026-12-01.json"
    data = json.loads(src.read_text())
    fam = data["families"]["gpt2"]
    runs = fam["runs"]
    for part, keep in (("a", 0), ("b", 1)):  # one seed per file
        one = {**data, "families": {"gpt2": {**fam, "runs": [runs[keep]]}}}
        (tmp_path / f"{part}.json").write_text(json.dumps(one))
    _, merged = ttl_merge.merge([tmp_path / "a.json", tmp_path / "b.json"], "gpt2")
    assert set(merged["late"]) == {0, 1} and merged["late"][1]["file"] == "b.json"
    split = fam["flops_split"]["methods"]["late"]  # the bench's own medians, recounted per seed
    alls = [merged["late"][s]["speedup_flops_all"] for s in (0, 1)]
    blocks = [merged["late"][s]["speedup_flops_blocks"] for s in (0, 1)]
    # the stored file was counted by the bench's former FLOPs count (attention scores in each
    # block): with the head, the product's one count gives late 1.61x where it said 1.73x;
    # blocks only, the attention term scaled every block alike, so the ratio is unchanged
    assert sum(alls) / 2 == pytest.approx(1.6116, abs=1e-4) and split["all"] == pytest.approx(
        1.7340, abs=1e-4
    )
    assert sum(blocks) / 2 == pytest.approx(split["no_head"], rel=1e-6)
    assert merged["baseline-linear"][0]["speedup_flops_all"] == 0.0  # never reached
    rows = ttl_merge.table(merged, "gpt2")
    assert any(r.startswith("| late | 0,1 | 2/2, 2 |") for r in rows)


def test_ttl_against_checks_runs_only_up_to_where_the_plans_part() -> None:
    from common import TTL_SIZES
    from ttl_against import first_diverging_step
    from ttl_plans import Budget, budget_plan

    size = TTL_SIZES["cpu"]["gpt2"]
    budget = Budget(400, 10)
    late, copy, early = (budget_plan(m, size, 0, budget) for m in ("late", "late-copy", "late-0.7"))
    assert first_diverging_step(copy, late) == late.stages[0].steps  # same 1-layer stage
    assert first_diverging_step(late, late) == late.total_steps
    assert first_diverging_step(early, late) == 0


def test_the_summary_says_whether_the_baselines_lr_was_tuned() -> None:
    one = ttl_sweep.BaselineLR(1e-3, ())
    assert not one.tuned and one.item("gpt2") == "gpt2.baseline_lr=untuned(0.001)"
    assert "NOT tuned" in one.line("gpt2") and "--lrs" in one.line("gpt2")
    assert "(one LR, 0.001, the scale's default)" in one.line("gpt2")
    assert "(one LR, 0.003, from --lr)" in ttl_sweep.BaselineLR(3e-3, (), "from --lr").line("x")
    assert not ttl_sweep.BaselineLR(1e-3, (1e-3,)).tuned  # a sweep of one LR tunes nothing
    mid = ttl_sweep.BaselineLR(3e-3, (1e-3, 3e-3, 6e-3))
    assert mid.tuned and not mid.at_edge and mid.item("llama") == "llama.baseline_lr=tuned(0.003)"
    assert mid.line("llama").endswith("best of 0.001, 0.003, 0.006")
    edge = ttl_sweep.BaselineLR(6e-3, (1e-3, 3e-3, 6e-3))
    assert edge.at_edge and "widen --lrs" in edge.line("gpt2")
    assert edge.as_json() == {"lr": 6e-3, "swept": [1e-3, 3e-3, 6e-3], "tuned": True}
