"""FLOPs with and without the head and embeddings, and the bound the head sets.

The time-to-loss FLOPs (the product's one count, growcockpit/plan/flops.py) count the LM head: at
8 × 128 with vocab 4000 it costs ≈ 2.6 blocks, so however few layers a growth plan
trains, each of its steps pays the head. Papers on shallow-then-deep training quote
non-embedding FLOPs, which leave the head out; the two counts tell different stories, so
the benchmark prints both, and the most the head lets any depth schedule save per token:
a step at depth k costs (k + h)/(L + h) of a full one, so training at depth 1 throughout
would save at most (L + h)/(1 + h), at depth 0 (embeddings and head only) (L + h)/h.
"""

from __future__ import annotations

import statistics
from typing import Any

from ttl_runs import first_reach

from growcockpit.plan.flops import head_in_blocks, speedup_to
from growcockpit.plan.types import Plan


def head_bound(plan: Plan) -> dict[str, float]:
    """h (the head's step cost in blocks, the product's count) and the per-token savings
    bounds of the module doc."""
    h, layers = head_in_blocks(plan), plan.model.final_layers
    return {
        "head_blocks": h,
        "one_layer_step": (1 + h) / (layers + h),
        "bound_depth1": (layers + h) / (1 + h),
        "bound_depth0": (layers + h) / h,
    }


def _reach_step(res: dict[str, Any], target: float) -> float | None:
    reach = first_reach(res.get("evals") or [], target)
    return float(reach["step"]) if reach else None


def speedups_by_method(
    base_plan: Plan,
    runs: list[dict[str, dict[str, Any]]],
    plans: dict[tuple[str, int], Plan],
) -> dict[str, Any]:
    """Per method, the median FLOPs speedup to the baseline's loss with and without the head.

    `plans[(method, seed)]` is the plan each run trained (the baseline's included; a run
    that never reached the loss counts 0, as in the summary). {"bound": …, "methods": …}.
    """
    out: dict[str, Any] = {"bound": head_bound(base_plan), "methods": {}}
    per: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        base = run.get("baseline")
        if not base or not base.get("evals"):
            continue
        target = base["evals"][-1]["val_loss"]
        b_step = _reach_step(base, target) or float(base["steps"])
        base_plan = plans.get(("baseline", base["seed"]), base_plan)
        for method, res in run.items():
            plan = plans.get((method, res["seed"]))
            step = _reach_step(res, target)
            if plan is None or step is None:
                per.setdefault(method, {}).setdefault("all", []).append(0.0)
                per[method].setdefault("no_head", []).append(0.0)
                continue
            speedup = speedup_to(base_plan, b_step, plan, step)
            row = per.setdefault(method, {})
            row.setdefault("all", []).append(speedup.all)
            row.setdefault("no_head", []).append(speedup.blocks)
    for method, row in per.items():
        out["methods"][method] = {k: statistics.median(v) for k, v in row.items()}
    return out


def print_flops(family: str, split: dict[str, Any]) -> None:
    """The two FLOPs counts per method and the head's bound (module doc)."""
    b = split["bound"]
    print(
        f"== {family}: the LM head costs {b['head_blocks']:.2f} blocks; a 1-layer step is "
        f"{b['one_layer_step']:.2f} of a full one: per token, depth 1 can save at most "
        f"{b['bound_depth1']:.2f}x of the FLOPs, depth 0 {b['bound_depth0']:.2f}x (head included)"
    )
    for method, row in split["methods"].items():
        if method == "baseline":
            continue
        print(
            f"   {method:<28} FLOPs to the baseline's loss, median speedup: "
            f"{row['all']:.2f}x with head and embeddings, {row['no_head']:.2f}x blocks only"
        )
