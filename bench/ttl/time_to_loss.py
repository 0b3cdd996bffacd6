"""Time (and FLOPs) to quality: the baseline against growth plans, at an equal budget.

By default every method gets the baseline's budget: the estimated compute of N
full-depth steps of the final model (`--budget`, default the scale's steps);
each growth plan's fill stage is lengthened until its estimated cost equals it,
so the steps it saves buy more tokens (bench/ttl/ttl_plans.py). The
full model trained for ½ and ¼ of the budget (`full@0.5`, `full@0.25`: its
schedule completed) and the fixed smaller models (`depth-1`, half depth) run
beside it; a growth speedup is claimed only against all of them
(bench/ttl/ttl_claims.py). `--same-steps` gives every method the baseline's step count instead
(the older protocol, which stops a growth plan after 0.5-0.8× of the compute).

Every method is a real `growcockpit train` subprocess of the same final model on
the built-in corpus, same data order and validation batches (batches are a pure
function of (seed, step)); bench/ttl/ttl_runs.py says what is measured and how a
finished run is reused. Per method and seed: training wall time, estimated
FLOPs, final validation loss, and the wall time and FLOPs to first reach the
baseline's final validation loss (interpolated between evaluations) with the
speedups over the baseline; then medians and min–max over the seeds.

    python bench/time_to_loss.py --family gpt2 --seeds 0,1,2 --threads 1 --parallel 2
    python bench/time_to_loss.py --methods baseline,mslt-longshallow-emb,plan:cpu-mslt-best
    python bench/time_to_loss.py --same-steps --methods baseline,mslt --mslt paper,longshallow
    python bench/time_to_loss.py --scale base --device cuda   # BERT-Base / GPT-2-small shapes
    python bench/time_to_loss.py --methods baseline,late --baseline-schedules linear,wsd --lr 3e-3
    python bench/time_to_loss.py --quick                # tiny (< 1 min per family): the smoke test
    python bench/time_to_loss.py --replot results.json --plot-x flops

Last line: `time_to_loss: gpt2.<method>_speedup_to_baseline_loss=… gpt2.<method>_flops_speedup=…`
(medians over the seeds; a seed that did not reach the loss counts as 0×, n/r).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent  # bench/: common.py; bench/ttl/: this study
for _folder in (BENCH, BENCH / "ttl"):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

from common import METHODS, MSLT_VARIANTS, TTL_SIZES, Size, method_plan  # noqa: E402
from corpus import CorpusError, text_path  # noqa: E402
from ttl_args import BUDGET_METHODS, parse_args  # noqa: E402
from ttl_claims import (  # noqa: E402
    bench_claims,
    claim_lines,
    claimed_items,
    claims_json,
    is_control,
)
from ttl_flops import print_flops, speedups_by_method  # noqa: E402
from ttl_gate import against_control, bench_gate, control_methods, gate_report, gated_items  # noqa: E402
from ttl_plans import Budget, MethodError, budget_plan, method_label, stages_summary  # noqa: E402
from ttl_report import markdown, plot, report_family  # noqa: E402
from ttl_runs import Job, analyse, completed, first_reach, run_jobs  # noqa: E402
from ttl_short import first_seed, short_controls, short_schedule  # noqa: E402
from ttl_sweep import (  # noqa: E402
    BaselineLR,
    expand,
    parse_lrs,
    pick_best,
    runs_at_best,
    sweep_table,
    tuned_baseline,
)

from growcockpit.compare.depth_gate import control_depths  # noqa: E402
from growcockpit.plan import estimate_cost  # noqa: E402
from growcockpit.plan.types import Plan  # noqa: E402

__all__ = ["BUDGET_METHODS", "eval_every", "first_reach", "main", "parse_args"]


def eval_every(steps: int, target: int) -> int:
    """The divisor of `steps` closest to steps/target, so the last eval is the last step."""
    want = max(1, steps // target)
    divisors = [d for d in range(1, steps + 1) if steps % d == 0]
    return min(divisors, key=lambda d: (abs(d - want), d))


def family_size(args: argparse.Namespace, scale: str, family: str) -> Size:
    size = TTL_SIZES[scale][family]
    changes: dict[str, Any] = {
        k: v
        for k, v in (
            ("steps", args.budget or args.steps),
            ("lr", args.lr),
            ("layers", args.layers),
            ("hidden", args.hidden),
            ("heads", args.heads),
            ("batch", args.batch),
            ("vocab", args.vocab),
            ("eval_batches", args.eval_batches),
        )
        if v
    }
    if args.dropout is not None:
        changes["dropout"] = args.dropout
    if args.corpus:
        changes["source"] = str(text_path(args.corpus))
    size = dataclasses.replace(size, **changes)
    evals = args.evals or (20 if args.same_steps else 40)
    return dataclasses.replace(size, eval_every=eval_every(size.steps, evals))


def method_plans(args: argparse.Namespace, size: Size, seed: int) -> list[tuple[str, Plan]]:
    """(label, plan) of every method for one seed, the baseline first (MethodError if bad)."""
    if args.same_steps:
        methods = [m.strip() for m in (args.methods or ",".join(METHODS)).split(",") if m.strip()]
        variants = [v.strip() for v in args.mslt.split(",") if v.strip()]
        for m in methods:
            if m not in METHODS:
                raise MethodError(
                    f"--methods: unknown {m!r} with --same-steps; of {', '.join(METHODS)}"
                )
        for v in variants:
            if v not in MSLT_VARIANTS:
                raise MethodError(f"--mslt: unknown {v!r}; one of {', '.join(MSLT_VARIANTS)}")
        names = [(m, v) for m in methods for v in (variants if m == "mslt" else [""])]
        if "baseline" not in methods:
            names.insert(0, ("baseline", ""))
        out = [
            (
                f"mslt-{v}" if m == "mslt" and len(variants) > 1 else m,
                method_plan(m, size, seed, v or "paper"),
            )
            for m, v in names
        ]
    else:
        methods = [
            m.strip() for m in (args.methods or ",".join(BUDGET_METHODS)).split(",") if m.strip()
        ]
        if "baseline" not in methods:
            methods.insert(0, "baseline")
        methods += [m for m in baseline_rivals(args) if m not in methods]
        if not args.no_depth_controls:
            methods += [m for m in control_methods(size.layers) if m not in methods]
        budget = Budget(size.steps, size.eval_every)
        schedule = short_schedule(args)
        out = [
            (
                method_label(m),
                # `--baseline-schedules wsd` alone: the baseline trains with WSD only
                budget_plan(
                    "baseline-wsd" if m == "baseline" and wsd_only(args) else m,
                    size,
                    seed,
                    budget,
                    schedule,
                ),
            )
            for m in methods
        ]
        if not args.no_short_controls:
            out += short_controls(out, size, seed, budget, schedule, seed == first_seed(args))
    return sorted(out, key=lambda lp: lp[0] != "baseline")


def baseline_rivals(args: argparse.Namespace) -> tuple[str, ...]:
    """The baseline's other schedules (`--baseline-schedules`) as methods: `baseline-wsd`."""
    schedules = [s.strip() for s in args.baseline_schedules.split(",") if s.strip()]
    for s in schedules:
        if s not in ("linear", "wsd"):
            raise MethodError(f"--baseline-schedules: unknown {s!r}; of linear, wsd")
    if wsd_only(args):
        return ()
    return ("baseline-wsd",) if "wsd" in schedules and not args.same_steps else ()


def wsd_only(args: argparse.Namespace) -> bool:
    """`--baseline-schedules wsd` without linear (budget mode): `baseline` itself is WSD."""
    schedules = {s.strip() for s in args.baseline_schedules.split(",") if s.strip()}
    return schedules == {"wsd"} and not args.same_steps


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replot:
        stored = json.loads(args.replot.read_text())
        if args.markdown:
            print(markdown(stored))
            return 0
        xs = ("wall_s", "flops") if args.plot_x == "both" else (args.plot_x,)
        print("\n\n".join(plot(stored, x) for x in xs))
        return 0
    scale = "quick" if args.quick else args.scale
    try:
        args.corpus = args.corpus and text_path(args.corpus)
    except CorpusError as exc:
        print(f"time_to_loss: {exc}", file=sys.stderr)
        return 2
    families = {"both": ["gpt2", "bert"], "all": ["gpt2", "bert", "llama"]}.get(
        args.family, [args.family]
    )
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.target_accuracy is not None:
        args.metric, args.target = "accuracy", args.target_accuracy
    if args.metric == "accuracy" and args.target is not None and not 0 < args.target <= 1:
        print(
            f"time_to_loss: --target {args.target:g}: an accuracy target is in (0, 1] "
            "(0.95 for 95 %)",
            file=sys.stderr,
        )
        return 2
    try:
        lrs = parse_lrs(args.lrs) if args.lrs else None
    except ValueError as exc:
        print(f"time_to_loss: {exc}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    tmp = None
    if args.runs_dir:
        root = args.runs_dir
    else:
        tmp = tempfile.TemporaryDirectory(prefix="time-to-loss-")
        root = Path(tmp.name)
    mode = "same-steps" if args.same_steps else "budget"
    data: dict[str, Any] = {"mode": mode, "scale": scale, "families": {}}
    summary: list[str] = []
    try:
        for family in families:
            size = family_size(args, scale, family)
            try:
                per_seed = [
                    (seed, expand(method_plans(args, size, seed), lrs or [])) for seed in seeds
                ]
            except MethodError as exc:
                print(f"time_to_loss: {exc}", file=sys.stderr)
                return 2
            plan_of = {(v.label, seed): plan for seed, vps in per_seed for v, plan in vps}
            jobs = []
            for i, (seed, vps) in enumerate(per_seed):
                if i % 2:  # alternate the order between seeds: drift hits every method alike
                    vps = vps[:1] + vps[:0:-1]
                jobs += [
                    Job(v.label, seed, plan, root / family / f"seed{seed}" / v.label)
                    for v, plan in vps
                ]
            results = run_jobs(
                jobs, args.parallel, args.device, args.threads, args.timeout_s, args.reuse_only
            )
            best, sweep = pick_best([v for v, _ in per_seed[0][1]], results, seeds)
            best, schedule = tuned_baseline(best, sweep, baseline_rivals(args))
            baseline_lr = (
                BaselineLR(
                    best["baseline"].lr,
                    tuple(lrs or ()),
                    "from --lr" if args.lr else "the scale's default",
                )
                if "baseline" in best
                else None
            )
            runs = []
            for seed, run in runs_at_best(best, results, seeds).items():
                if "baseline" not in run:
                    continue  # --reuse-only without this seed's baseline: nothing to compare with
                if not completed(run["baseline"]):
                    base = run["baseline"]
                    print(
                        f"time_to_loss: seed {seed}: the baseline did not finish (status "
                        f"{base['status']}, rc {base['rc']}): no target, the seed is left out; "
                        "raise --timeout-s or lower --budget",
                        flush=True,
                    )
                    continue
                for method, res in run.items():
                    plan = plan_of[(best[method].label, seed)]
                    cost = estimate_cost(plan)
                    unit = estimate_cost(plan_of[(best["baseline"].label, seed)])
                    res.update(
                        {
                            "plan": plan.name,
                            "stages": stages_summary(plan),
                            # estimated cost / the cost of `size.steps` baseline steps (the budget)
                            "cost_vs_budget": cost.total / (unit.baseline_step_cost * size.steps),
                        }
                    )
                analyse(run)
                runs.append(run)
            if lrs or baseline_rivals(args):
                print()
                print(f"== {family}: LR sweep, median final val loss over the seeds (* = picked):")
                print("\n".join(sweep_table(sweep)))
            kind = "wsd" if schedule == "baseline-wsd" or wsd_only(args) else "linear"
            if baseline_rivals(args) or wsd_only(args):
                print(
                    f"== {family}: the target baseline is {best['baseline'].label} ({kind} schedule)"
                )
            if baseline_lr is not None:
                print(baseline_lr.line(family))
            at_best = {(m, s): plan_of[(v.label, s)] for m, v in best.items() for s in seeds}
            split = speedups_by_method(plan_of[(best["baseline"].label, seeds[0])], runs, at_best)
            print_flops(family, split)
            fam_summary, items = report_family(
                family,
                size,
                runs,
                None if args.same_steps else size.steps,
                "peak LR: each method's best of " + ", ".join(f"{lr:g}" for lr in lrs)
                if lrs
                else None,
            )
            depth_needed = () if args.no_depth_controls else tuple(control_depths(size.layers))
            gate = bench_gate(runs, size.layers, depth_needed)
            vs_control = (
                against_control(runs, f"depth-{gate.best_control.layers}", first_reach)
                if gate is not None and gate.pays
                else {}
            )
            print("\n".join(gate_report(family, gate, vs_control)))
            asked = {v.method for _, vps in per_seed for v, _ in vps}  # keyed as `runs` are
            needed = tuple(sorted(m for m in asked if is_control(m) and m != "baseline"))
            claims = bench_claims(runs, gate, args.metric, args.target, needed)
            print("\n".join(claim_lines(family, claims)))
            items = claimed_items(gated_items(items, gate, family), claims, family)
            data["families"][family] = {
                "depth_gate": None
                if gate is None
                else {**dataclasses.asdict(gate), "pays": gate.pays},
                "vs_best_control": vs_control,
                "claims": claims_json(claims),
                "size": dataclasses.asdict(size),
                "budget_baseline_steps": None if args.same_steps else size.steps,
                "runs": runs,
                "summary": fam_summary,
                **({"lr_sweep": sweep} if lrs else {}),
                "baseline_target": {"label": best["baseline"].label, "schedule": kind},
                "flops_split": split,
                **({"baseline_lr": baseline_lr.as_json()} if baseline_lr else {}),
            }
            if not runs:
                items = [f"{family}.compared=none(no_finished_baseline)"]
            summary += ([baseline_lr.item(family)] if baseline_lr else []) + items
    finally:
        if tmp is not None:
            tmp.cleanup()
    line = "time_to_loss: " + " ".join(summary) + f" elapsed={time.monotonic() - t0:.0f}s"
    data["summary"] = line
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=2))
        print(f"results: {args.json}")
    if args.plot:
        xs = ("wall_s", "flops") if args.plot_x == "both" else (args.plot_x,)
        print()
        print("\n\n".join(plot(data, x) for x in xs))
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
