"""Tables for bench/hops_cpu.py's records: the depth gate and growth against every control.

A record's tag is `<method>-lr<LR>-s<SEED>`: `fixed<L>` (a fixed L-layer model trained for
the baseline's FLOPs; fixed4 is the full model's long schedule), `full@<f>` (the full
model trained from scratch for a fraction f of the budget, its WSD decay at its own end),
or a growth plan's name (`stack`, `late`). The verdict is the product's own
(`growth_claim`, compare/claim.py, the rule the race, `compare` and the pin apply): growth
is claimed only where the depth gate passes and growth reaches the target before the full
model's envelope (its long and short schedules on the same seed) and every smaller fixed
model, in FLOPs and in wall time, on every seed, with a one-sided paired t-test over ≥ 3
seeds at p < 0.05. The bench's own bar, ≥ 1.5× on every seed, is reported beside it.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from growcockpit.compare.claim import NO_GATE, GrowthClaim, SeedCosts, growth_claim  # noqa: E402
from growcockpit.compare.depth_gate import (  # noqa: E402
    DepthArm,
    DepthGate,
    control_depths,
    depth_gate,
)
from growcockpit.compare.envelope import (  # noqa: E402
    Axis,
    CurvePoint,
    Target,
    envelope,
    points,
)
from growcockpit.compare.envelope import cost_to as env_cost  # noqa: E402
from growcockpit.compare.seed_stats import MIN_SEEDS, SeedTest, seed_test  # noqa: E402

AXES: tuple[Axis, ...] = ("flops", "wall_s")

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


def _control(method: str, lr: str) -> str:
    """A control run's name as the product's claim words it (compare/envelope.py)."""
    if method == f"fixed{FULL}":
        return f"baseline (lr {lr})"
    if method.startswith("fixed"):
        return f"depth-{method[5:]} (lr {lr})"
    return f"{method} (lr {lr})"  # full@0.5, full@0.25


def _curve(run: dict[str, Any], flops_only: bool = False) -> list[CurvePoint]:
    """A run's accuracy curve; `flops_only` drops its wall times (runs made at different
    machine loads, whose summed step times compare nothing), so a claim is made on FLOPs."""
    evals = [{**e, "wall_s": None} for e in run["evals"]] if flops_only else run["evals"]
    return points(evals, "accuracy")


def gate_of(recs: list[dict[str, Any]]) -> DepthGate | None:
    """The product's depth gate (compare/depth_gate.py) on the fixed depths' final val
    losses, each depth at its best seed-0 LR; every depth must have MIN_SEEDS seeds (or as
    many as the full model has, if fewer), else it is undecided; None where no smaller
    fixed model was run."""
    seeds = sorted({r["seed_n"] for r in recs if r["method"] == f"fixed{FULL}"})

    def arm(layers: int) -> DepthArm | None:
        lr = best_lr(recs, f"fixed{layers}")
        runs = [r for r in recs if r["method"] == f"fixed{layers}" and r["lr_tag"] == lr]
        losses = tuple(float(r["evals"][-1]["val_loss"]) for r in runs if r["evals"])
        return DepthArm(layers, losses) if losses else None

    base = arm(FULL)
    controls = [a for d in control_depths(FULL) if (a := arm(d)) is not None]
    if base is None or not controls:
        return None
    return depth_gate(base, controls, needed=control_depths(FULL), seeds=min(len(seeds), MIN_SEEDS))


@dataclass(frozen=True)
class RecipeClaim:
    """One growth method at one LR over the seeds it ran: the product's claim and whether
    it meets this bench's target (≥ CLAIM× the strongest control on every seed, both axes)."""

    method: str
    lr: str
    seeds_run: int
    seeds_all: int
    claim: GrowthClaim
    tests: dict[Axis, SeedTest]  # every seed's ratio to the strongest control, per axis

    @property
    def meets_target(self) -> bool:
        return self.claim.claimed and all(
            t.ratios and min(t.ratios) >= CLAIM for t in self.tests.values()
        )

    @property
    def line(self) -> str:
        head = f"{self.method} (lr {self.lr}), {self.seeds_run} of {self.seeds_all} seeds"
        goal = "met" if self.meets_target else "not met"
        return f"{head}: {self.claim.text} (the {CLAIM}× target on every seed: {goal})"


def claims(
    recs: list[dict[str, Any]],
    target: float,
    gate_recs: list[dict[str, Any]] | None = None,
    flops_only: bool = False,
) -> list[RecipeClaim]:
    """Each growth method's verdict through `growth_claim` (compare/claim.py), the one rule
    the race, `compare` and the pin apply: per seed growth's cost against the full model's
    envelope (its long runs at every LR and its short schedules) and every smaller fixed
    model (every LR), the seed spread and a one-sided paired t-test with ≥ 3 seeds.
    `gate_recs`: the records the depth gate reads (a back-to-back rerun holds no fixed
    1- and 2-layer runs of its own); `flops_only`: judge FLOPs alone (`_curve`)."""
    goal = Target("accuracy", target)
    gate = gate_of(recs if gate_recs is None else gate_recs)
    by: dict[tuple[str, str], dict[int, dict[str, Any]]] = defaultdict(dict)
    for r in recs:
        by[(r["method"], r["lr_tag"])][r["seed_n"]] = r
    seeds = sorted({s for (m, _), runs in by.items() if m == f"fixed{FULL}" for s in runs})
    controls = [k for k in by if k[0].startswith(("fixed", "full@"))]
    missing = sorted(
        f"{_control(*k)} seed {s}"
        for k in controls
        for s, r in by[k].items()
        if r.get("status", "completed") != "completed"
    )
    out = []
    for name in sorted(k for k in by if k not in controls):
        per_seed = []
        for seed in seeds:
            run = by[name].get(seed)
            if run is None:
                continue
            full = {
                _control(*k): _curve(by[k][seed], flops_only)
                for k in controls
                if not _control(*k).startswith("depth-") and seed in by[k]
            }
            fixed = {
                _control(*k): env_cost(_curve(by[k][seed], flops_only), goal)
                for k in controls
                if _control(*k).startswith("depth-") and seed in by[k]
            }
            per_seed.append(
                SeedCosts(
                    seed, env_cost(_curve(run, flops_only), goal), envelope(full, goal), fixed
                )
            )
        claim = growth_claim(per_seed, goal, gate, missing)
        tests = {axis: _seed_test(per_seed, axis) for axis in AXES[: 1 if flops_only else 2]}
        out.append(RecipeClaim(name[0], name[1], len(per_seed), len(seeds), claim, tests))
    return out


def _seed_test(per_seed: list[SeedCosts], axis: Axis) -> SeedTest:
    """The seed spread and test on `axis` whatever the verdict: `growth_claim` stops at the
    first seed a control wins, but the table shows every seed's ratio to the strongest
    control (the envelope or a smaller fixed model; 0: growth never reached the target)."""
    ratios = []
    for s in per_seed:
        mine = None if s.growth is None else s.growth.on(axis)
        env, _ = s.full.on(axis)
        costs = [c for c in (env, *(f.on(axis) for f in s.fixed.values() if f)) if c is not None]
        if mine is None or mine <= 0:
            ratios.append(0.0)
        else:
            ratios.append(min(costs) / mine if costs else math.inf)
    return seed_test(ratios)


def _range(c: RecipeClaim, axis: Axis) -> str:
    t = c.tests.get(axis)
    if t is None or not t.ratios:
        return "-"
    med, lo, hi = t.spread
    if t.seeds == 1:
        return f"{lo:.2f}"
    return f"{lo:.2f}–{hi:.2f} (median {med:.2f})"


def _p(c: RecipeClaim, axis: Axis) -> str:
    t = c.tests.get(axis)
    if t is None or t.p is None:
        return "-"
    return f"{t.p:.3g}"


def claim_table(cs: list[RecipeClaim]) -> list[str]:
    """Per recipe: × the strongest control per seed (min–max, median), the p-value of the
    one-sided paired t-test of the log ratios, and the claim."""
    rows = [
        "| method | LR | seeds | × FLOPs (min–max, median) | × wall (min–max, median) "
        "| p (FLOPs) | p (wall) | claim | 1.5× target |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cs:
        rows.append(
            f"| {c.method} | {c.lr} | {c.seeds_run} | {_range(c, 'flops')} "
            f"| {_range(c, 'wall_s')} | {_p(c, 'flops')} | {_p(c, 'wall_s')} "
            f"| {c.claim.status} | {'met' if c.meets_target else 'not met'} |"
        )
    return rows


def growth_table(
    recs: list[dict[str, Any]], target: float, cs: list[RecipeClaim]
) -> tuple[list[str], list[str]]:
    """Each seed's cost to the target for every method at its LR, the envelope, the ratios;
    and the verdict lines, one per growth method (`claims`)."""
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
    verdict = [c.line for c in cs]
    if lr_full:
        verdict.append(f"(the full model's long schedule at its best seed-0 LR: {lr_full})")
    return rows, verdict


def report(
    root: Path, target: float, gate_root: Path | None = None, flops_only: bool = False
) -> str:
    """The page's tables and verdicts for the records under `root` (`claims` for the
    meaning of `gate_root`, the gate's records, and `flops_only`)."""
    recs = load(root)
    gate_recs = None if gate_root is None else load(gate_root)
    cs = claims(recs, target, gate_recs, flops_only)
    gate = gate_table(recs, target)
    rows, verdict = growth_table(recs, target, cs)
    g = gate_of(recs if gate_recs is None else gate_recs)
    return "\n".join(
        [f"## Gate (fixed depths, equal FLOPs; target {target:.0%} accuracy)", "", *gate, ""]
        + [f"Depth gate (final val loss): {g.text if g else NO_GATE}", ""]
        + [f"## Growth against every control (target {target:.0%} accuracy)", "", *rows, ""]
        + [
            "## Growth by recipe: spread over seeds, test, claim",
            "",
            *claim_table(cs),
            "",
        ]
        + ["## Verdict", "", *[f"- {v}" for v in verdict]]
    )
