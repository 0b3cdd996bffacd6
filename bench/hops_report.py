"""Tables for bench/hops_cpu.py's records: the depth gate and growth against every control.

A record's tag is `<method>-lr<LR>-s<SEED>`: `fixed<L>` (a fixed L-layer model trained for
the baseline's FLOPs; fixed4 is the full model's long schedule), `full@<f>` (the full
model trained from scratch for a fraction f of the budget, its WSD decay at its own end),
or a growth plan's name (`stack`, `late`). The full model's cost to a target is the lower
envelope over its long and short schedules on the same seed; growth is claimed only where
it beats that envelope, in FLOPs and in wall time, on every seed, while no smaller fixed
model reaches the target at all.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

TAG = re.compile(r"^(?P<method>.+?)-lr(?P<lr>.+)-s(?P<seed>\d+)$")
FULL = 4
CLAIM = 1.5


def load(root: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted(root.glob("*.json")):
        rec = json.loads(path.read_text())
        m = TAG.match(rec["tag"])
        if m:
            rec.update(method=m["method"], lr_tag=m["lr"], seed_n=int(m["seed"]))
            out.append(rec)
    return out


def cost_to(evals: list[dict[str, Any]], target: float, axis: str) -> float | None:
    """The first evaluation at or above `target` accuracy, interpolated from the one before."""
    prev = None
    for e in evals:
        acc = e.get("accuracy")
        if acc is None:
            continue
        if acc >= target:
            if prev is None or prev["accuracy"] == acc:
                return float(e[axis])
            f = (target - prev["accuracy"]) / (acc - prev["accuracy"])
            return float(prev[axis] + f * (e[axis] - prev[axis]))
        prev = e
    return None


def _fmt(x: float | None, unit: str = "") -> str:
    if x is None:
        return "never"
    return f"{x:.3g}{unit}"


def gate_table(recs: list[dict[str, Any]], target: float) -> list[str]:
    """Fixed depths at equal FLOPs, every LR and seed: final/best accuracy, cost to target."""
    rows = [
        "| model | LR | seed | steps | final acc | best acc | final val loss | FLOPs to target | wall to target |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    fixed = [r for r in recs if r["method"].startswith("fixed")]
    for r in sorted(fixed, key=lambda r: (r["method"], float(r["lr"]), r["seed_n"])):
        ev = r["evals"]
        rows.append(
            f"| {r['method'][5:]} layers | {r['lr']:g} | {r['seed_n']} | {r['stages'][0][1]} "
            f"| {ev[-1]['accuracy']:.3f} | {max(e['accuracy'] for e in ev):.3f} "
            f"| {ev[-1]['val_loss']:.3f} | {_fmt(cost_to(ev, target, 'flops'))} "
            f"| {_fmt(cost_to(ev, target, 'wall_s'), ' s')} |"
        )
    return rows


def best_lr(recs: list[dict[str, Any]], method: str) -> str | None:
    """The LR whose seed-0 run ends with the highest accuracy (the gate's own tuning)."""
    runs = [r for r in recs if r["method"] == method and r["seed_n"] == 0]
    if not runs:
        return None
    return str(max(runs, key=lambda r: r["evals"][-1]["accuracy"])["lr_tag"])


def growth_table(recs: list[dict[str, Any]], target: float) -> tuple[list[str], list[str]]:
    """Each seed's cost to the target for every method at its LR, the envelope, the ratios."""
    lr_full = best_lr(recs, f"fixed{FULL}")
    by: dict[tuple[str, str], dict[int, dict[str, Any]]] = defaultdict(dict)
    for r in recs:
        by[(r["method"], r["lr_tag"])][r["seed_n"]] = r
    full_names = [k for k in by if k[0] == f"fixed{FULL}" or k[0].startswith("full@")]
    seeds = sorted({s for (m, lr), runs in by.items() if m == f"fixed{FULL}" for s in runs})
    growth = sorted(k for k in by if not k[0].startswith(("fixed", "full@")))
    smaller = sorted(k for k in by if k[0].startswith("fixed") and k[0] != f"fixed{FULL}")
    rows = [
        "| method | LR | seed | FLOPs to target | wall to target | full envelope FLOPs (by) | envelope wall (by) | × FLOPs | × wall |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    verdict: list[str] = []
    for seed in seeds:
        env: dict[str, tuple[float, str] | None] = {"flops": None, "wall_s": None}
        for name in full_names:
            run = by[name].get(seed)
            if run is None:
                continue
            for axis in env:
                c = cost_to(run["evals"], target, axis)
                have = env[axis]
                if c is not None and (have is None or c < have[0]):
                    env[axis] = (c, f"{name[0]}@lr{name[1]}")
        for name in full_names + growth + smaller:
            run = by[name].get(seed)
            if run is None:
                continue
            f, w = cost_to(run["evals"], target, "flops"), cost_to(run["evals"], target, "wall_s")
            ef, ew = env["flops"], env["wall_s"]
            rows.append(
                f"| {name[0]} | {name[1]} | {seed} | {_fmt(f)} | {_fmt(w, ' s')} "
                f"| {_fmt(ef and ef[0])} ({ef[1] if ef else '-'}) "
                f"| {_fmt(ew and ew[0], ' s')} ({ew[1] if ew else '-'}) "
                f"| {_fmt(ef[0] / f if ef and f else None)} | {_fmt(ew[0] / w if ew and w else None)} |"
            )
    for name in growth:
        ratios = []
        for seed in seeds:
            run = by[name].get(seed)
            if run is None:
                ratios.append(None)
                continue
            f = cost_to(run["evals"], target, "flops")
            w = cost_to(run["evals"], target, "wall_s")
            ratios.append((f, w))
        verdict.append(_verdict(name, ratios, seeds, by, full_names, target))
    if lr_full:
        verdict.append(f"(the full model's long schedule at its best seed-0 LR: {lr_full})")
    return rows, verdict


def _verdict(
    name: tuple[str, str],
    costs: list[tuple[float | None, float | None] | None],
    seeds: list[int],
    by: dict[tuple[str, str], dict[int, dict[str, Any]]],
    full_names: list[tuple[str, str]],
    target: float,
) -> str:
    label = f"{name[0]} (lr {name[1]})"
    done = [c for c in costs if c is not None]
    if len(done) < len(seeds):
        return f"{label}: {len(done)} of {len(seeds)} seeds run: not a result"
    lines = []
    ratios_f, ratios_w = [], []
    for seed, c in zip(seeds, costs, strict=True):
        assert c is not None
        env_f = _env(by, full_names, seed, target, "flops")
        env_w = _env(by, full_names, seed, target, "wall_s")
        if c[0] is None:
            lines.append(f"seed {seed}: never reaches the target")
            ratios_f.append(0.0)
            ratios_w.append(0.0)
            continue
        rf = env_f / c[0] if env_f else float("inf")
        rw = env_w / c[1] if env_w and c[1] else float("inf")
        ratios_f.append(rf)
        ratios_w.append(rw)
    ok = all(r >= CLAIM for r in ratios_f + ratios_w)
    spread = (
        f"× FLOPs {min(ratios_f):.2f}–{max(ratios_f):.2f} (median {statistics.median(ratios_f):.2f}), "
        f"× wall {min(ratios_w):.2f}–{max(ratios_w):.2f}"
    )
    behind = sum(r < 1.0 for r in ratios_f)
    if ok:
        head = f"claimed: ≥ {CLAIM}× sooner than the full model's envelope on every seed"
    elif behind:
        head = (
            f"no growth speedup is claimed: the full model trained from scratch reaches "
            f"{target:.0%} with fewer FLOPs on {behind} of {len(seeds)} seeds"
        )
    else:
        head = (
            f"no growth speedup is claimed: ahead of the full model, but not {CLAIM}× on every seed"
        )
    return f"{label}: {head} ({len(seeds)} seeds; {spread} against the full model's envelope){'; ' + '; '.join(lines) if lines else ''}"


def _env(
    by: dict[tuple[str, str], dict[int, dict[str, Any]]],
    full_names: list[tuple[str, str]],
    seed: int,
    target: float,
    axis: str,
) -> float | None:
    costs = [
        c
        for name in full_names
        if (run := by[name].get(seed)) is not None
        and (c := cost_to(run["evals"], target, axis)) is not None
    ]
    return min(costs) if costs else None


def report(root: Path, target: float) -> str:
    recs = load(root)
    gate = gate_table(recs, target)
    rows, verdict = growth_table(recs, target)
    return "\n".join(
        [f"## Gate (fixed depths, equal FLOPs; target {target:.0%} accuracy)", "", *gate, ""]
        + [f"## Growth against every control (target {target:.0%} accuracy)", "", *rows, ""]
        + ["## Verdict", "", *[f"- {v}" for v in verdict]]
    )
