"""Every control in every verdict: the bench's growth claims against the full model's
envelope and the smaller fixed models, per seed (growcockpit/compare/claim.py).

Per seed, the full model's cost to the target is the least over the long baseline and
its short schedules (`baseline`, `baseline-wsd`, `baseline-<f>x`, `full@<f>`): the
envelope. The smaller fixed models are the `depth-<K>` controls. Each growth method's
claim (`growth_claim`) is made over the seeds; the last line's speedups of a method
whose claim does not hold read `unclaimed(<measured>)`, and one line per method says
why (which control wins, a control that did not finish, one seed, the test).

The target is the seed's baseline's final validation loss by default, or a fixed value
of a metric (`--metric accuracy --target 0.95`: 95 % exact-match accuracy, higher is
better).
"""

from __future__ import annotations

import re
from typing import Any

from ttl_plans import BASELINE_FRACTION, DEPTH, FULL_AT

from growcockpit.compare.claim import GrowthClaim, SeedCosts, growth_claim, unclaimed_mark
from growcockpit.compare.depth_gate import DepthGate
from growcockpit.compare.envelope import (
    SHORT_FRACTIONS,
    Metric,
    Target,
    cost_to,
    envelope,
    points,
)

FULL_DEPTH = re.compile(r"^baseline(-wsd)?$")


def short_control_methods(fractions: tuple[float, ...] = SHORT_FRACTIONS) -> list[str]:
    """The full-depth short-schedule controls the bench runs by default."""
    return [f"full@{f:g}" for f in fractions]


def is_full_depth(method: str) -> bool:
    """A run of the full model alone: the long baseline or one of its shorter schedules."""
    return bool(
        FULL_DEPTH.match(method) or BASELINE_FRACTION.match(method) or FULL_AT.match(method)
    )


def is_control(method: str) -> bool:
    return is_full_depth(method) or bool(DEPTH.match(method))


def _done(res: dict[str, Any] | None) -> bool:
    return bool(res) and res.get("rc", 0) == 0 and res.get("status") == "completed"  # type: ignore[union-attr]


def seed_target(
    run: dict[str, dict[str, Any]], metric: Metric, value: float | None
) -> Target | None:
    """The seed's target: `value`, else the baseline's final value of `metric`."""
    if value is not None:
        return Target(metric, value)
    curve = points(run.get("baseline", {}).get("evals") or [], metric)
    return Target(metric, curve[-1].value) if curve else None


def bench_claims(
    runs: list[dict[str, dict[str, Any]]],
    gate: DepthGate | None,
    metric: Metric = "val_loss",
    value: float | None = None,
    needed: tuple[str, ...] = (),
) -> dict[str, GrowthClaim]:
    """Each growth method's claim over the seeds (module doc); `needed`: the controls the
    bench asked for, whose absence or unfinished run on any seed leaves it undecided."""
    methods = [m for run in runs for m in run if not is_control(m)]
    missing = sorted({c for run in runs for c in needed if not _done(run.get(c))})
    out: dict[str, GrowthClaim] = {}
    for method in dict.fromkeys(methods):
        seeds: list[SeedCosts] = []
        first: Target | None = None
        for run in runs:
            target = seed_target(run, metric, value)
            res = run.get(method)
            if target is None or not _done(res):
                continue
            first = first or target
            full = {
                m: points(r["evals"], metric)
                for m, r in run.items()
                if is_full_depth(m) and _done(r)
            }
            fixed = {
                m: cost_to(points(r["evals"], metric), target)
                for m, r in run.items()
                if DEPTH.match(m) and _done(r)
            }
            grown = cost_to(points(res["evals"], metric), target)  # type: ignore[index]
            seeds.append(
                SeedCosts(int(res.get("seed", len(seeds))), grown, envelope(full, target), fixed)
            )  # type: ignore[union-attr]
        unfinished = [
            f"{method} (seed {r[method].get('seed')})"
            for r in runs
            if method in r and not _done(r[method])
        ]
        out[method] = growth_claim(
            seeds, first or Target(metric, float("nan")), gate, [*missing, *unfinished]
        )
    return out


def claim_lines(family: str, claims: dict[str, GrowthClaim]) -> list[str]:
    """One line per growth method: claimed or not, and why."""
    return [f"== {family}: {m}: {c.status}: {c.text}" for m, c in claims.items()]


def key_of(method: str) -> str:
    """The last line's key of a method (as ttl_report writes it)."""
    return re.sub(r"[^A-Za-z0-9]+", "_", method)


def claimed_items(items: list[str], claims: dict[str, GrowthClaim], family: str) -> list[str]:
    """The last line's items with each growth method's speedups marked `unclaimed(…)`
    unless its claim holds; `<family>.<method>_claim=<status>` added per method."""
    by_key = {key_of(m): c for m, c in claims.items()}
    out = []
    for item in items:
        parts = []
        for part in item.split(" "):
            key, _, val = part.partition("=")
            method = key.split(".", 1)[-1].rsplit("_speedup", 1)[0].removesuffix("_flops")
            claim = by_key.get(method)
            marked = "_speedup" in key and claim is not None and not val.startswith("unclaimed(")
            parts.append(f"{key}={unclaimed_mark(val, claim)}" if marked else part)
        out.append(" ".join(parts))
    return out + [f"{family}.{key_of(m)}_claim={c.status}" for m, c in claims.items()]


def claims_json(claims: dict[str, GrowthClaim]) -> dict[str, Any]:
    return {
        m: {
            "status": c.status,
            "text": c.text,
            "winner": c.winner,
            "target": {"metric": c.target.metric, "value": c.target.value},
            "tests": {a: {"ratios": list(t.ratios), "p": t.p} for a, t in c.tests.items()},
        }
        for m, c in claims.items()
    }
