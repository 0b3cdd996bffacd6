"""Finished time-to-loss runs reported against the baseline of an earlier --json (same seed).

bench/time_to_loss.py always trains a seed's baseline beside its methods. When that
baseline was already measured (an earlier invocation's --json, same size, seed and plan)
and the box is too loaded to train it again, this reads the methods' finished runs from a
--runs-dir (nothing is trained) and compares them with that baseline, writing a --json in
time_to_loss's format (each result's `baseline_from` names the file). Only sound when the
runs are deterministic: `--check A=B` asserts that method A's evaluations, up to the last
step before its plan diverges from B's, equal B's in the earlier file bit for bit.

    python bench/ttl/ttl_against.py --against OLD.json --runs-dir DIR --seed 0 \
        --methods late-0.7,late-copy --check late-copy=late --json NEW.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent  # bench/: common.py; bench/ttl/: this study
for _folder in (BENCH, BENCH / "ttl"):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

import time_to_loss  # noqa: E402
from common import Size  # noqa: E402
from ttl_flops import speedups_by_method  # noqa: E402
from ttl_plans import Budget, budget_plan  # noqa: E402
from ttl_report import report_family  # noqa: E402
from ttl_runs import Job, analyse, reusable, run_job  # noqa: E402


def first_diverging_step(a: Any, b: Any) -> int:
    """Steps of the longest common prefix of two plans' stages (same layers, steps, init)."""
    done = 0
    for sa, sb in zip(a.stages, b.stages, strict=False):
        if sa != sb:
            return done
        done += sa.steps
    return done


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", type=Path, required=True, help="the earlier --json")
    ap.add_argument("--runs-dir", type=Path, required=True)
    ap.add_argument("--family", default="gpt2")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", required=True, help="comma list (as time_to_loss --methods)")
    ap.add_argument("--check", action="append", default=[], help="A=B: A's runs equal B's")
    ap.add_argument("--json", type=Path, required=True)
    args = ap.parse_args(argv)

    old = json.loads(args.against.read_text())
    fam = old["families"][args.family]
    size = Size(**fam["size"])
    old_run = next(r for r in fam["runs"] if r["baseline"]["seed"] == args.seed)
    budget = Budget(size.steps, size.eval_every)
    base = dict(old_run["baseline"])
    base_plan = budget_plan(
        base["plan"].removeprefix(f"bench-{args.family}-"), size, args.seed, budget
    )
    run: dict[str, dict[str, Any]] = {"baseline": base}
    plans = {("baseline", args.seed): base_plan}
    for method in args.methods.split(","):
        plan = budget_plan(method, size, args.seed, budget)
        job = Job(
            method, args.seed, plan, args.runs_dir / args.family / f"seed{args.seed}" / method
        )
        if not reusable(job):
            print(f"ttl_against: {method}: no finished run of this plan in {job.run_dir}, left out")
            continue
        res = run_job(job, None, 1, 0.0)  # reused: reads the run, trains nothing
        res.update(
            {
                "plan": plan.name,
                "stages": len(plan.stages),
                "cost_vs_budget": time_to_loss.estimate_cost(plan).total
                / (time_to_loss.estimate_cost(base_plan).baseline_step_cost * size.steps),
            }
        )
        res["lr"] = plan.optim.lr
        run[method] = res
        plans[(method, args.seed)] = plan
    for pair in args.check:
        a, b = pair.split("=")
        upto = first_diverging_step(plans[(a, args.seed)], budget_plan(b, size, args.seed, budget))
        ev_a = [e for e in run[a]["evals"] if e["step"] < upto]
        ev_b = [e for e in old_run[b]["evals"] if e["step"] < upto]
        same = [e["val_loss"] for e in ev_a] == [e["val_loss"] for e in ev_b]
        print(
            f"ttl_against: {a} vs {b} (earlier file), {len(ev_a)} evals before step {upto}: "
            f"{'identical' if same else 'DIFFERENT'}"
        )
        if not same:
            return 1
    analyse(run)
    for res in run.values():
        res["baseline_from"] = args.against.name
    split = speedups_by_method(base_plan, [run], plans)
    summary, items = report_family(args.family, size, [run], size.steps)
    data = {
        "mode": "budget",
        "scale": old.get("scale"),
        "families": {
            args.family: {
                "size": fam["size"],
                "budget_baseline_steps": size.steps,
                "runs": [run],
                "summary": summary,
                "baseline_target": {**fam.get("baseline_target", {}), "from": args.against.name},
                "flops_split": split,
                "checks": args.check,
            }
        },
        "summary": "ttl_against: " + " ".join(items),
    }
    args.json.write_text(json.dumps(data, indent=2))
    print(f"results: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
