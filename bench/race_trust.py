"""How far can a short race be trusted? Early order against final order, over seeds.

A race cuts candidates on their validation loss at a small fraction of the budget. That
is only worth its compute if the order there is the order at the end. This benchmark
trains every candidate of a race to its *full* budget, once per seed, and asks of the
curves what a race would have seen:

- the rank correlation (Spearman ρ, Kendall τ-b) between the candidates' validation
  loss at 5 %, 10 %, 25 % and 50 % of the budget and their final validation loss;
- how often a race picking at that fraction (the race's own successive halving:
  growcockpit.race.halving, rungs at f·budget / eta^k, eta 2, keep 1, loss interpolated
  at equal compute) picks the true winner: the lowest final loss of the same seed, and
  the lowest mean final loss over all seeds (the plan a user wants in expectation);
- the regret: the true winner's final loss minus the race winner's.

A rung is a prefix of the candidate's own full plan (same LR schedule over its full
steps: growcockpit/race/runs.py), so a full run's curve holds exactly what the race
would measure at every rung; one set of full runs answers every fraction.

Candidates per family: the shipped CPU recipes fitted to the same budget (a plan whose
estimated compute is more than 5 % off the baseline's is left out, and said), plus the
full-depth baseline the race adds (GPT-2's at its recipes' LR 1e-3 and its tuned 3e-3;
`--baseline-lrs` to choose). Every plan is scaled to `--scale` of its steps (budget,
stage steps, warm-ups, ramps), so the shape of each schedule is kept at a fraction of
its CPU cost, at batch `--batch` × `--seq` tokens; evaluation every ≈ 1/`--evals` of a
run with `--eval-batches` batches (the same batches for every candidate). Runs are
`growcockpit train` subprocesses driven by the race's runner and reused when their plan
is unchanged and they completed, so an interrupted benchmark resumes.

    nice -n 5 python bench/race_trust.py --seeds 0,1,2,3,4 --scale 0.2 --batch 8 --seq 64 \\
        --evals 20 --parallel 2 --json bench/results/race_trust-cpu-2026-12-01.json
    python bench/race_trust.py --replot bench/results/race_trust-cpu-2026-12-01.json

Last line: `race_trust: safe_fraction=F winner_rate@0.05=… kendall@0.05=… …`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
for path in (str(BENCH), str(REPO)):
    if path not in sys.path:
        sys.path.insert(0, path)

from rank_stats import kendall_tau_b, spearman_rho  # noqa: E402

from growcockpit.plan import Plan, PlanError, plan_from_dict  # noqa: E402
from growcockpit.race.candidates import baseline_tables, is_full_depth, plan_flops  # noqa: E402
from growcockpit.race.halving import cut, ranked, rung_computes, value_at  # noqa: E402
from growcockpit.race.runs import advance_run, run_state  # noqa: E402

# the recipes per family, and the LRs its full-depth baseline races at (GPT-2's shipped
# recipes train at 1e-3, its tuned baseline at 3e-3; Llama's baseline ships tuned)
FAMILIES = {
    "gpt2": (["zero", "middle", "layerdrop", "late"], [1e-3, 3e-3]),
    "llama": (["baseline", "late", "mslt", "vcycle"], [3e-3]),
}
FRACTIONS = (0.05, 0.1, 0.25, 0.5)
# the safe point: the race's winner is the true one in ≥ 80 % of races, and the early order
# is mostly the final one (mean Kendall τ ≥ 0.6: 80 % of pairs in the final order)
SAFE_RATE = 0.8
SAFE_TAU = 0.6
STEP_KEYS = ("steps", "warmup_steps", "rewarmup_steps", "ramp_steps")
FLOPS_TOLERANCE = 0.05


@dataclass(frozen=True)
class Cand:
    key: str
    tables: dict[str, Any]
    plan: Plan


def _scaled(n: Any, scale: float) -> Any:
    return max(1, round(n * scale)) if isinstance(n, int) and n > 0 else n


def scale_tables(data: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The plan's raw tables with every step count × `args.scale`, the batch and sequence
    `args.batch` × `args.seq` (unless 0: the plan's), evaluation every ≈ total/evals."""
    scale, evals, eval_batches = args.scale, args.evals, args.eval_batches
    out = json.loads(json.dumps(data))
    if args.batch:
        out.setdefault("optim", {})["batch_size"] = args.batch
    if args.seq:
        out.setdefault("data", {})["seq_len"] = args.seq
    if "budget" in out:
        out["budget"]["baseline_steps"] = _scaled(out["budget"]["baseline_steps"], scale)
    optim = out.setdefault("optim", {})
    optim["warmup_steps"] = _scaled(optim.get("warmup_steps", 0), scale)
    for stage in out.get("stages", []):
        for key in STEP_KEYS:
            if key in stage:
                stage[key] = _scaled(stage[key], scale)
    metrics = out.setdefault("metrics", {})
    metrics["every_steps"] = 1  # every eval lands on a logged step (its FLOPs known)
    metrics["eval_batches"] = eval_batches
    metrics["eval_every_steps"] = 1  # refitted below, once the total is known
    out.setdefault("checkpoint", {})["every_steps"] = 10**6  # the run's end checkpoints
    total = plan_from_dict(out).total_steps
    metrics["eval_every_steps"] = max(1, round(total / evals))
    return out


def _plan(tables: dict[str, Any], where: str) -> Plan:
    try:
        return plan_from_dict(tables, source=where)
    except PlanError as exc:
        raise SystemExit(f"race_trust: {where}: {exc}") from None


def candidates(family: str, args: argparse.Namespace) -> tuple[list[Cand], list[str]]:
    """The family's candidates (recipes at the baseline's budget, then the baseline(s))
    and the notes on what was left out."""
    cands: list[Cand] = []
    notes: list[str] = []
    names, lrs = FAMILIES[family]
    lrs = args.baseline_lrs or lrs
    for name in names:
        path = REPO / "sample_plans" / f"cpu-{family}-{name}.toml"
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        tables = scale_tables(raw, args)
        cands.append(Cand(name, tables, _plan(tables, str(path))))
    bases = [c for c in cands if is_full_depth(c.plan)]
    if not bases:  # the race's own baseline, from the first plan
        first = cands[0]
        tables = baseline_tables(first.tables, first.plan)
        plan = _plan(tables, f"{family} baseline")
        tables["metrics"]["eval_every_steps"] = max(1, round(plan.total_steps / args.evals))
        bases = [Cand("baseline", tables, _plan(tables, f"{family} baseline"))]
        cands.append(bases[0])
    base = bases[0]
    cands = [c for c in cands if c is not base]
    for lr in lrs:  # the baseline at every LR asked (its own LR among them)
        tables = {**base.tables, "optim": {**base.tables["optim"], "lr": lr}}
        tables["name"] = f"{base.tables.get('name', 'baseline')}-lr{lr:g}"
        cands.append(Cand(f"baseline-lr{lr:g}", tables, _plan(tables, f"{family} baseline")))
    bases = cands[-len(lrs) :]
    budget = plan_flops(bases[0].plan)
    kept = []
    for c in cands:
        off = plan_flops(c.plan) / budget - 1
        if abs(off) > FLOPS_TOLERANCE:
            notes.append(f"{family}: {c.key} left out: its compute is {off:+.0%} of the budget")
        else:
            kept.append(c)
    return kept, notes


def _train(plan_file: Path, run_dir: Path, text: str) -> None:
    """The race's runner to the plan's end; a run of another plan is started afresh."""
    if plan_file.exists() and plan_file.read_text(encoding="utf-8") != text:
        shutil.rmtree(run_dir, ignore_errors=True)
    plan_file.parent.mkdir(parents=True, exist_ok=True)
    plan_file.write_text(text, encoding="utf-8")
    t = time.monotonic()
    state = advance_run(run_dir, plan_file, None)
    print(
        f"race_trust: {run_dir.name}: {state.status}, {len(state.points)} evals, "
        f"final {state.points[-1].loss if state.points else float('nan'):.4f} "
        f"({time.monotonic() - t:.0f} s)",
        flush=True,
    )


def train_all(family: str, cands: list[Cand], seeds: list[int], out: Path, parallel: int) -> None:
    jobs = []
    for seed in seeds:
        for c in cands:
            text = tomlkit.dumps({**c.tables, "seed": seed})
            jobs.append((out / family / "plans" / f"{c.key}-s{seed}.toml",
                         out / family / "runs" / f"{c.key}-s{seed}", text))  # fmt: skip
    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        list(pool.map(lambda j: _train(*j), jobs))


def curves(family: str, cands: list[Cand], seeds: list[int], out: Path) -> dict[str, Any]:
    """Per seed and candidate: the (FLOPs, val loss) points and whether it completed."""
    res: dict[str, Any] = {}
    for seed in seeds:
        for c in cands:
            state = run_state(out / family / "runs" / f"{c.key}-s{seed}")
            res.setdefault(str(seed), {})[c.key] = {
                "completed": state.completed,
                "points": [[p.flops, p.loss] for p in state.points],
            }
    return res


def _at(curve: dict[str, Any], compute: float) -> float | None:
    from growcockpit.race.halving import Point

    pts = [Point(f, v) for f, v in curve["points"]]
    return value_at(pts, compute, finished=curve["completed"])


def race_winner(seed_curves: dict[str, Any], budget: float, fraction: float, eta: int = 2) -> str:
    """The winner of the race's successive halving with its last rung at fraction·budget."""
    live = sorted(seed_curves)
    for rung in rung_computes(len(live), eta, 1, fraction * budget):
        live = cut({k: _at(seed_curves[k], rung) for k in live}, eta, 1)
    return live[0]


def analyse(family: str, runs: dict[str, Any], budget: float) -> dict[str, Any]:
    """Per fraction: ρ, τ per seed, the race's winner against the true ones, the regret."""
    seeds = sorted(runs)
    keys = sorted(runs[seeds[0]])
    finals = {s: {k: runs[s][k]["points"][-1][1] for k in keys} for s in seeds}
    mean_final = {k: sum(finals[s][k] for s in seeds) / len(seeds) for k in keys}
    best_mean = ranked(mean_final)[0]
    out: dict[str, Any] = {"candidates": keys, "budget_flops": budget, "best_mean": best_mean}
    out["mean_final"] = mean_final
    for f in FRACTIONS:
        rows = []
        for s in seeds:
            early = [_at(runs[s][k], f * budget) for k in keys]
            final = [finals[s][k] for k in keys]
            win = race_winner(runs[s], budget, f)
            true = ranked(finals[s])[0]
            rows.append({
                "seed": int(s),
                "spearman": spearman_rho(early, final),
                "kendall": kendall_tau_b(early, final),
                "race_winner": win,
                "true_winner": true,
                "regret": finals[s][win] - finals[s][true],
                "picks_best_mean": win == best_mean,
            })  # fmt: skip
        out[str(f)] = rows
    return out


def _stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    return {
        "races": n,
        "spearman_mean": sum(r["spearman"] for r in rows) / n,
        "spearman_min": min(r["spearman"] for r in rows),
        "kendall_mean": sum(r["kendall"] for r in rows) / n,
        "kendall_min": min(r["kendall"] for r in rows),
        "winner_rate": sum(r["race_winner"] == r["true_winner"] for r in rows) / n,
        "best_mean_rate": sum(r["picks_best_mean"] for r in rows) / n,
        "regret_mean": sum(r["regret"] for r in rows) / n,
        "regret_max": max(r["regret"] for r in rows),
    }


def _safe(table: dict[str, Any]) -> float | None:
    ok = [
        f
        for f in FRACTIONS
        if table[str(f)]["winner_rate"] >= SAFE_RATE and table[str(f)]["kendall_mean"] >= SAFE_TAU
    ]
    return ok[0] if ok else None


def summary(analyses: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per fraction, pooled and per family; the safe point: the smallest fraction safe in
    every family (families race different numbers of candidates: pooling their τ would
    let a 3-candidate family's coarse τ vouch for a 6-candidate one)."""
    table = {str(f): _stats([r for a in analyses.values() for r in a[str(f)]]) for f in FRACTIONS}
    by_family = {fam: {str(f): _stats(a[str(f)]) for f in FRACTIONS} for fam, a in analyses.items()}
    safes = {fam: _safe(t) for fam, t in by_family.items()}
    found = [v for v in safes.values() if v is not None]
    safe = max(found) if found and len(found) == len(safes) else None
    rule = f"winner_rate >= {SAFE_RATE} and kendall_mean >= {SAFE_TAU} in every family"
    return {
        "fractions": table,
        "by_family": by_family,
        "family_safe": safes,
        "safe_fraction": safe,
        "safe_rule": rule,
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| fraction | races | Spearman ρ mean (min) | Kendall τ mean (min) | winner = true "
        "winner | winner = best mean | regret mean (max) |",
        "|---|---|---|---|---|---|---|",
    ]
    for f, r in result["summary"]["fractions"].items():
        lines.append(
            f"| {float(f):.0%} | {r['races']} | {r['spearman_mean']:.2f} ({r['spearman_min']:.2f})"
            f" | {r['kendall_mean']:.2f} ({r['kendall_min']:.2f}) | {r['winner_rate']:.0%} | "
            f"{r['best_mean_rate']:.0%} | {r['regret_mean']:.3f} ({r['regret_max']:.3f}) |"
        )
    for fam, a in result["families"].items():
        lines.append("")
        safe = result["summary"]["family_safe"][fam]
        lines.append(
            f"{fam}: {len(a['candidates'])} candidates ({', '.join(a['candidates'])}); "
            f"best mean final: {a['best_mean']}; safe from: {safe}"
        )
        for f in FRACTIONS:
            st = result["summary"]["by_family"][fam][str(f)]
            rows = a[str(f)]
            picks = ", ".join(f"s{r['seed']}:{r['race_winner']}" for r in rows)
            lines.append(
                f"  {f:.0%}: ρ {st['spearman_mean']:.2f}, τ {st['kendall_mean']:.2f} "
                f"(min {st['kendall_min']:.2f}), winner right {st['winner_rate']:.0%}; "
                f"race winners {picks}; true {', '.join(r['true_winner'] for r in rows)}"
            )
    lines.append(
        f"safe point ({result['summary']['safe_rule']}): {result['summary']['safe_fraction']}"
    )
    return "\n".join(lines)


def last_line(result: dict[str, Any]) -> str:
    s = result["summary"]
    parts = [f"safe_fraction={s['safe_fraction']}"]
    for f, r in s["fractions"].items():
        parts += [f"winner_rate@{f}={r['winner_rate']:.2f}", f"kendall@{f}={r['kendall_mean']:.2f}"]
    return "race_trust: " + " ".join(parts)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--families", default="gpt2,llama", help="comma list of gpt2, llama")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--scale", type=float, default=0.2, help="× every step count of the recipes")
    ap.add_argument("--batch", type=int, default=8, help="batch size (0: the plan's, 16)")
    ap.add_argument("--seq", type=int, default=64, help="sequence length (0: the plan's, 128)")
    ap.add_argument("--evals", type=int, default=20, help="evaluations per run (about)")
    ap.add_argument("--eval-batches", type=int, default=2)
    ap.add_argument(
        "--baseline-lrs", default="", help="the full-depth baseline's LRs (default: per family)"
    )
    ap.add_argument("--parallel", type=int, default=2, help="runs at a time")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per run")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "runs" / "race_trust")
    ap.add_argument("--json", type=Path, help="write the result (curves included) here")
    ap.add_argument("--replot", type=Path, help="print the tables of a result JSON; train nothing")
    args = ap.parse_args(argv)
    args.seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    args.baseline_lrs = [float(v) for v in args.baseline_lrs.split(",") if v.strip()]
    args.families = [f.strip() for f in args.families.split(",") if f.strip()]
    bad = [f for f in args.families if f not in FAMILIES]
    if bad or not 0 < args.scale <= 1 or not args.seeds:
        ap.error(f"--families of {', '.join(FAMILIES)}; --scale in (0, 1]; --seeds not empty")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replot is not None:  # the summary again from the stored analyses (this rule)
        result = json.loads(args.replot.read_text())
        result["summary"] = summary(result["families"])
        if args.json is not None:
            args.json.write_text(json.dumps(result, indent=1) + "\n")
        print(markdown(result))
        print(last_line(result))
        return 0
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    began = time.monotonic()
    families: dict[str, Any] = {}
    all_notes: list[str] = []
    raw: dict[str, Any] = {}
    for family in args.families:
        cands, notes = candidates(family, args)
        all_notes += notes
        for note in notes:
            print(f"race_trust: {note}", flush=True)
        train_all(family, cands, args.seeds, args.out, args.parallel)
        runs = curves(family, cands, args.seeds, args.out)
        bad = [f"{s}/{k}" for s, by in runs.items() for k, c in by.items() if not c["completed"]]
        if bad:
            raise SystemExit(f"race_trust: runs that did not complete: {', '.join(bad)}")
        budget = max(plan_flops(c.plan) for c in cands if is_full_depth(c.plan))
        families[family] = analyse(family, runs, budget)
        raw[family] = runs
    result = {
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "notes": all_notes,
        "wall_s": time.monotonic() - began,
        "families": families,
        "summary": summary(families),
        "curves": raw,
    }
    print(markdown(result))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(last_line(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
