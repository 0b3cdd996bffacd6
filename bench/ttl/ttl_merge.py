"""Merge bench/time_to_loss.py --json files into one seed summary (Markdown).

Seeds measured in separate invocations (e.g. seeds 0–1 one day, 2–4 the next) are read
side by side: each result keeps the target and speedups of its own file (the baseline of
its own seed and invocation), and the FLOPs speedup is recounted per seed both with the
head and embeddings and blocks only (bench/ttl/ttl_flops.py), from the plans rebuilt by name.
A method measured on the same seed in two files is taken from the first file given.

    python bench/ttl/ttl_merge.py bench/results/a.json bench/results/b.json [--family gpt2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent  # bench/: common.py; bench/ttl/: this study
for _folder in (BENCH, BENCH / "ttl"):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

from common import Size  # noqa: E402
from ttl_flops import _reach_step  # noqa: E402
from ttl_plans import Budget, budget_plan  # noqa: E402

from growcockpit.plan.flops import speedup_to  # noqa: E402
from growcockpit.plan.types import Plan  # noqa: E402


def plan_of(res: dict[str, Any], family: str, size: Size) -> Plan:
    """The plan a result trained, rebuilt from its plan name (`bench-<family>-<method>`)."""
    method = res["plan"].removeprefix(f"bench-{family}-")
    return budget_plan(method, size, res["seed"], Budget(size.steps, size.eval_every))


def add_speedups(run: dict[str, dict[str, Any]], family: str, size: Size) -> None:
    """Add `speedup_flops_all` / `speedup_flops_blocks` to every result of one seed's run."""
    base = run["baseline"]
    target = base["evals"][-1]["val_loss"]
    base_plan = plan_of(base, family, size)
    b_step = _reach_step(base, target) or float(base["steps"])
    for res in run.values():
        step = _reach_step(res, target)
        if step is None or "plan" not in res:
            res["speedup_flops_all"] = res["speedup_flops_blocks"] = 0.0
            continue
        speedup = speedup_to(base_plan, b_step, plan_of(res, family, size), step)
        res["speedup_flops_all"], res["speedup_flops_blocks"] = speedup.all, speedup.blocks


def merge(files: list[Path], family: str) -> tuple[Size, dict[str, dict[int, dict[str, Any]]]]:
    """method → seed → result over `files` (the first file's result wins on a repeat)."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    size: Size | None = None
    for path in files:
        fam = json.loads(path.read_text())["families"][family]
        size = size or Size(**fam["size"])
        for run in fam["runs"]:
            add_speedups(run, family, Size(**fam["size"]))
            for method, res in run.items():
                res["file"] = path.name
                out.setdefault(method, {}).setdefault(res["seed"], res)
    assert size is not None
    return size, out


def _rng(values: list[float], fmt: str, suffix: str = "") -> str:
    if not values:
        return "-"
    med, lo, hi = statistics.median(values), min(values), max(values)
    if lo == hi:
        return f"{med:{fmt}}{suffix}"
    return f"{med:{fmt}}{suffix} ({lo:{fmt}} – {hi:{fmt}})"


def _x(values: list[float]) -> str:
    """Speedups, a seed that never reached the loss counted 0 (shown n/r)."""
    if not values or max(values) == 0:
        return "not reached"
    return _rng(values, ".2f", "×").replace("0.00×", "n/r").replace("(0.00 –", "(n/r –")


def table(results: dict[str, dict[int, dict[str, Any]]], family: str) -> list[str]:
    lines = [
        f"| {family} method | seeds | reached, ahead | final val loss | Δ vs tuned baseline "
        "| FLOPs to its loss, head + embeddings | blocks only | wall (loaded box) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for method, by_seed in results.items():
        rs = [by_seed[s] for s in sorted(by_seed) if "final_val_loss" in by_seed[s]]
        reached = sum(1 for r in rs if r.get("reach"))
        ahead = sum(1 for r in rs if r.get("reach") and r["final_val_loss"] < r["target"])
        lines.append(
            f"| {method} | {','.join(str(r['seed']) for r in rs)} | {reached}/{len(rs)}, "
            f"{ahead if method != 'baseline' else '-'} "
            f"| {_rng([r['final_val_loss'] for r in rs], '.3f')} "
            f"| {_rng([r['final_val_loss'] - r['target'] for r in rs], '+.3f')} "
            f"| {_x([r['speedup_flops_all'] for r in rs])} "
            f"| {_x([r['speedup_flops_blocks'] for r in rs])} "
            f"| {_x([r.get('speedup_wall') or 0.0 for r in rs])} |"
        )
    return lines


def seed_lines(results: dict[str, dict[int, dict[str, Any]]]) -> list[str]:
    lines = [
        "| seed | method | file | final val | Δ | FLOPs ×, all | blocks only | wall × | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = [(s, m, r) for m, by in results.items() for s, r in by.items()]
    for seed, method, r in sorted(rows, key=lambda t: t[0]):
        if "final_val_loss" not in r:
            continue
        lines.append(
            f"| {seed} | {method} | {r['file']} | {r['final_val_loss']:.3f} "
            f"| {r['final_val_loss'] - r['target']:+.3f} | {r['speedup_flops_all']:.2f} "
            f"| {r['speedup_flops_blocks']:.2f} | {r.get('speedup_wall') or 0.0:.2f} "
            f"| {r['wall_s']:.0f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--family", default="gpt2")
    ap.add_argument("--methods", help="comma list: only these, in this order (default: all)")
    ap.add_argument("--seeds", action="store_true", help="also the per-seed rows")
    args = ap.parse_args(argv)
    _, results = merge(args.files, args.family)
    if args.methods:
        results = {m: results[m] for m in args.methods.split(",") if m in results}
    print("\n".join(table(results, args.family)))
    if args.seeds:
        print()
        print("\n".join(seed_lines(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
