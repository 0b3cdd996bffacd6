"""Growth claims over compared runs: the full model's envelope from the runs of its
model on shorter schedules, the smaller fixed models, the seeds (compare/claim.py).

Which run is what is read from the plans the runs carry: the target's fixed full-depth
model on fewer steps is a short-schedule control (named `full@<share>` by its share of
the target's steps), the same model at fewer layers a fixed-size control (`depth-<K>`),
another run of the target's model and length another seed of it. A growth run is
compared with the runs of its own seed (its plan's `seed`); the runs of one growth
plan over several seeds form one claim. Pure: the compare screen, `growcockpit
compare` and the pin call it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from growcockpit.compare.claim import GrowthClaim, SeedCosts, growth_claim
from growcockpit.compare.controls import control_depth, is_baseline_seed, short_fraction
from growcockpit.compare.depth_gate import DepthGate
from growcockpit.compare.envelope import Metric, Target, cost_to, envelope, points
from growcockpit.compare.progress import RunProgress


@dataclass(frozen=True)
class RunClaims:
    """Per growth run's name its group's claim; the short-schedule runs found."""

    claims: dict[str, GrowthClaim]
    short: tuple[str, ...]
    target: Target | None


def seed_of(run: RunProgress) -> int:
    seed = run.plan.get("seed", 0)
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else 0


def control_name(run: RunProgress, target: RunProgress) -> str | None:
    """`full@<share>`, `depth-<K>` or "baseline" (the target or a seed of it); None: growth
    or not a control of `target`."""
    if run is target or is_baseline_seed(run.plan, target.plan):
        return "baseline"
    share = short_fraction(run.plan, target.plan)
    if share is not None:
        return f"full@{share:.2g}"
    depth = control_depth(run.plan, target.plan)
    return None if depth is None else f"depth-{depth}"


def target_of(target: RunProgress, metric: Metric, value: float | None) -> Target | None:
    """`value`, else the target run's final value of `metric` (None: it has none)."""
    if value is not None:
        return Target(metric, value)
    curve = points(target.evals, metric)
    return Target(metric, curve[-1].value) if curve else None


def run_claims(
    runs: Sequence[RunProgress],
    target: RunProgress,
    gate: DepthGate | None,
    growth: Sequence[RunProgress],
    metric: Metric = "val_loss",
    value: float | None = None,
) -> RunClaims:
    """The claim of each of `growth` (runs of `runs` that grow) against the controls
    among `runs` (module doc)."""
    goal = target_of(target, metric, value)
    named = [(r, control_name(r, target)) for r in runs if r not in growth]
    controls = [(r, n) for r, n in named if n is not None]
    short = tuple(r.name for r, n in controls if n.startswith("full@"))
    if goal is None:
        return RunClaims({}, short, None)
    missing = sorted({f"{n} ({r.name})" for r, n in controls if r.status != "completed"})
    done = [(r, n) for r, n in controls if r.status == "completed"]
    groups: dict[str, list[RunProgress]] = {}
    for run in growth:
        groups.setdefault(run.plan_name or run.name, []).append(run)
    out: dict[str, GrowthClaim] = {}
    for members in groups.values():
        seeds = []
        for run in members:
            mine = [(r, n) for r, n in done if seed_of(r) == seed_of(run)] or done
            full = {
                n if n != "baseline" else r.name: points(r.evals, metric)
                for r, n in mine
                if not n.startswith("depth-")
            }
            fixed = {
                n: cost_to(points(r.evals, metric), goal) for r, n in mine if n.startswith("depth-")
            }
            reach = cost_to(points(run.evals, metric), goal)
            seeds.append(SeedCosts(seed_of(run), reach, envelope(full, goal), fixed))
        unfinished = [f"{r.name} (the growth run)" for r in members if r.status != "completed"]
        claim = growth_claim(seeds, goal, gate, [*missing, *unfinished])
        out.update({r.name: claim for r in members})
    return RunClaims(out, short, goal)
