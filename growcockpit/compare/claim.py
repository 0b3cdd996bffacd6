"""Whether a growth speedup may be claimed, and the one line that says so.

Why one function: the bench, `growcockpit compare`, the race, the pin and the GPU bench
must never disagree on what counts as a win. A growth run's speedup is claimed only where

1. the depth gate says depth pays (compare/depth_gate.py) and every control it needs
   finished: otherwise the verdict is "unclaimed" (depth does not pay) or "undecided"
   (a control missing; a control that finished and beat growth is named even then);
2. on every seed, growth reaches the target before the full model's envelope (the least
   cost over the long baseline and its short schedules, compare/envelope.py) and before
   every smaller fixed model, in FLOPs and in wall time;
3. with ≥ 3 seeds, a one-sided paired t-test over the seeds' log cost ratios against the
   strongest control gives p < 0.05 (compare/seed_stats.py); one seed is "not a result".

Otherwise one line names the control that wins ("the full model trained for half the
budget (full@0.5) reaches this loss sooner; no growth speedup is claimed").
`growth_claim` is the entry point; `unclaimed_mark` is how a number is shown when
the claim does not hold.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from growcockpit.compare.depth_gate import DepthGate, undecided_text
from growcockpit.compare.envelope import Axis, Cost, Envelope, Target, control_words
from growcockpit.compare.seed_stats import SeedTest, seed_test

ClaimStatus = Literal["claimed", "unclaimed", "undecided"]
NO_CLAIM = "no growth speedup is claimed"
NO_GATE = (
    "depth gate undecided: no fixed-size control (the final model at depth 1 and half depth, "
    f"the same compute) was run; {NO_CLAIM}"
)


@dataclass(frozen=True)
class SeedCosts:
    """One seed: growth's cost to the target (None: never reached it), the full model's
    envelope, and each smaller fixed model's cost (None: it never reached the target)."""

    seed: int
    growth: Cost | None
    full: Envelope
    fixed: Mapping[str, Cost | None] = field(default_factory=dict)


@dataclass(frozen=True)
class GrowthClaim:
    """The verdict on one growth method over its seeds (module doc)."""

    status: ClaimStatus
    target: Target
    tests: Mapping[Axis, SeedTest]  # per axis: ratios vs the strongest control, the test
    winner: str | None  # the control that reaches the target sooner (None: growth leads)
    text: str

    @property
    def claimed(self) -> bool:
        return self.status == "claimed"

    @property
    def seeds(self) -> int:
        return max((t.seeds for t in self.tests.values()), default=0)


def unclaimed_mark(value: str, claim: GrowthClaim | None) -> str:
    """A measured speedup as a surface shows it: bare only when claimed."""
    return value if claim is not None and claim.claimed else f"unclaimed({value})"


def claim_text(claim: GrowthClaim, measured: str) -> str:
    """A growth run's verdict with its claim: the claim beside the ratio where it holds,
    else "no growth speedup claimed: <why>; measured: <ratio>"."""
    if claim.claimed:
        return f"{measured}; {claim.text}"
    why = claim.text.removesuffix(f"; {NO_CLAIM}").removesuffix(NO_CLAIM).rstrip("; ")
    return f"no growth speedup claimed: {why}; measured: {measured}"


def _strongest(
    axis: Axis, s: SeedCosts
) -> tuple[float | None, str | None, list[tuple[str, float]]]:
    """The least control cost on `axis` (the envelope or a fixed model), its name, and
    every control's cost there (None/empty: no control reached the target)."""
    costs: list[tuple[str, float]] = []
    x, by = s.full.on(axis)
    if x is not None and by is not None:
        costs.append((by, x))
    for name, cost in s.fixed.items():
        v = None if cost is None else cost.on(axis)
        if v is not None:
            costs.append((name, v))
    if not costs:
        return None, None, []
    name, best = min(costs, key=lambda c: c[1])
    return best, name, costs


def _axes(seeds: Sequence[SeedCosts]) -> list[Axis]:
    """The axes every seed measured growth on (FLOPs first)."""
    out: list[Axis] = []
    both: tuple[Axis, ...] = ("flops", "wall_s")
    for axis in both:
        if all(s.growth is None or s.growth.on(axis) is not None for s in seeds):
            out.append(axis)
    return out


def growth_claim(
    seeds: Sequence[SeedCosts],
    target: Target,
    gate: DepthGate | None,
    missing: Sequence[str] = (),
) -> GrowthClaim:
    """The claim of the module doc. `gate` None: no fixed-size control was run, which is
    undecided too (no smaller model was ruled out); `missing`: controls that were asked
    for (a short schedule, a depth) and did not finish, on any seed."""
    if gate is not None and gate.status == "does-not-pay":
        return GrowthClaim("unclaimed", target, {}, None, gate.text)
    tests: dict[Axis, SeedTest] = {}
    for axis in _axes(seeds):
        ratios = []
        for s in seeds:
            best, name, _ = _strongest(axis, s)
            mine = None if s.growth is None else s.growth.on(axis)
            if mine is None:
                ratios.append(0.0)
                continue
            if best is None:  # no control reached the target at all
                ratios.append(math.inf)
                continue
            ratios.append(best / mine if mine > 0 else math.inf)
            if best <= mine and name is not None:  # decisive even with a control missing
                return GrowthClaim(
                    "unclaimed",
                    target,
                    tests,
                    name,
                    f"{_cap(control_words(name))} reaches {target.text} sooner "
                    f"({_axis_words(axis)}, seed {s.seed}); {NO_CLAIM}",
                )
        tests[axis] = seed_test(ratios)
    never = [s.seed for s in seeds if s.growth is None]
    if never:
        seeds_text = ", ".join(str(n) for n in never)
        return GrowthClaim(
            "unclaimed", target, tests, None,
            f"growth never reached {target.text} (seed {seeds_text}); {NO_CLAIM}",
        )  # fmt: skip
    if gate is None or gate.undecided or missing or not seeds or not tests:
        what = list(missing)
        if gate is None and not what:
            return GrowthClaim("undecided", target, tests, None, NO_GATE)
        if not seeds:
            what.append("every seed of the growth run")
        elif not tests:
            what.append("any cost axis")
        line = undecided_text(what) if what else gate.text  # type: ignore[union-attr]
        return GrowthClaim("undecided", target, tests, None, line)
    main = tests.get("flops") or next(iter(tests.values()))
    lead = _lead_text(seeds, target, tests)
    if all(t.significant for t in tests.values()):
        return GrowthClaim("claimed", target, tests, None, f"{lead}; {main.text}")
    return GrowthClaim("unclaimed", target, tests, None, f"{lead}; {main.text}; {NO_CLAIM}")


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _axis_words(axis: Axis) -> str:
    return "FLOPs" if axis == "flops" else "wall time"


def _lead_text(seeds: Sequence[SeedCosts], target: Target, tests: Mapping[Axis, SeedTest]) -> str:
    by = [b for s in seeds if (b := s.full.on("flops")[1] or s.full.on("wall_s")[1])]
    full_best = statistics.mode(by) if by else "none reached it"
    parts = []
    for axis, t in tests.items():
        finite = [r for r in t.ratios if math.isfinite(r)]
        med = statistics.median(finite) if finite else math.inf
        parts.append(f"{med:.2f}× ({_axis_words(axis)})")
    return (
        f"growth reaches {target.text} {' and '.join(parts)} sooner than the full model's best "
        f"({full_best}) and every smaller fixed model, on every seed"
    )
