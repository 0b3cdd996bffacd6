"""The depth gate: does the full-depth model deserve its depth at this budget?

Growth starts small. At a budget far below what the full model needs, a smaller fixed
model trained for the same compute ends lower, and any plan that starts small then
"wins" for that reason alone: its speedup says what a smaller model buys, not what
growing buys. So a growth speedup is claimed only where depth pays: the full-depth
baseline's final validation loss must beat every fixed-size control (the final
architecture at fewer layers, one stage, all trained, the same compute) by more than
the seed spread, or, with one seed per arm, by a stated margin. Where it does not,
every surface says so in one line and claims nothing. Where a control it needs has not
finished (cut by a timeout, failed, still training), the gate is "undecided", never
"pays": judging the controls that happen to have ended would let a missing 1-layer run
turn a loss into a claim.

Pure: final losses in, a typed verdict out; `compare`, the pin, the race and the bench
all call `depth_gate`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

ONE_SEED_MARGIN = 0.02  # nats: the gap asked for when no arm has two seeds to measure spread

GateStatus = Literal["pays", "does-not-pay", "undecided"]


@dataclass(frozen=True)
class DepthArm:
    """One fixed depth's final validation losses, one per seed."""

    layers: int
    final_losses: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.final_losses)

    @property
    def spread(self) -> float:
        """max − min over the seeds (0 with one seed)."""
        return max(self.final_losses) - min(self.final_losses)


@dataclass(frozen=True)
class DepthGate:
    """The gate's verdict. `best_control` is the fixed depth that ends lowest among the
    controls; `lowest_layers` the depth that ends lowest of all (the baseline's included)."""

    status: GateStatus
    baseline: DepthArm
    controls: tuple[DepthArm, ...]
    best_control: DepthArm | None  # None: undecided with no control finished
    lowest_layers: int
    needed_gap: float  # the seed spread, or the stated margin with one seed
    by_spread: bool  # needed_gap is a measured seed spread (not the margin)
    text: str

    @property
    def pays(self) -> bool:
        return self.status == "pays"

    @property
    def undecided(self) -> bool:
        return self.status == "undecided"

    @property
    def gap(self) -> float | None:
        """How far the best control ends above the baseline (negative: below it)."""
        if self.best_control is None:
            return None
        return self.best_control.median - self.baseline.median


class DepthGateError(ValueError):
    """Inputs the gate cannot judge (the message says which)."""


def _needed(baseline: DepthArm, control: DepthArm, margin: float) -> tuple[float, bool]:
    if len(baseline.final_losses) > 1 or len(control.final_losses) > 1:
        return max(baseline.spread, control.spread), True
    return margin, False


def undecided_text(missing: Sequence[str]) -> str:
    """The gate's line while a control it needs has not finished."""
    names = ", ".join(missing)
    return (
        f"depth gate undecided: {names} did not finish (cut, failed or still training); "
        "no growth speedup is claimed"
    )


def depth_gate(
    baseline: DepthArm,
    controls: Sequence[DepthArm],
    margin: float = ONE_SEED_MARGIN,
    needed: Sequence[int] = (),
    seeds: int = 0,
) -> DepthGate:
    """The verdict of the module doc. Every control must be shallower than the baseline.

    `needed`: the control depths the gate must see finished; `seeds`: how many seeds each
    arm must have (0: any). A needed depth without a finished arm, or an arm (the
    baseline's included) with fewer seeds than asked, makes the gate "undecided"."""
    if not controls and not needed:
        raise DepthGateError("the depth gate needs at least one fixed-size control")
    for arm in (baseline, *controls):
        if not arm.final_losses:
            raise DepthGateError(f"the {arm.layers}-layer arm has no final loss")
    if any(c.layers >= baseline.layers for c in controls):
        raise DepthGateError(f"a control must have fewer layers than the {baseline.layers}")
    ordered = tuple(sorted(controls, key=lambda c: (c.median, c.layers)))
    have = {c.layers: len(c.final_losses) for c in controls}
    missing = [f"depth-{d}" for d in sorted(set(needed)) if d not in have]
    short = [
        f"depth-{a.layers}" if a is not baseline else "the baseline"
        for a in (baseline, *ordered)
        if seeds and len(a.final_losses) < seeds
    ]
    if missing or short:
        absent = missing + [f"{s} (fewer than {seeds} seeds)" for s in short]
        best_known = ordered[0] if ordered else None
        return DepthGate(
            "undecided", baseline, ordered, best_known, baseline.layers, 0.0, False,
            undecided_text(absent),
        )  # fmt: skip
    best = ordered[0]
    needs = [(c, *_needed(baseline, c, margin)) for c in ordered]
    pays = all(c.median - baseline.median > need for c, need, _ in needs)
    # the control that comes closest to (or beats) the baseline, relative to what it must clear
    tight, need, by_spread = min(needs, key=lambda n: n[0].median - baseline.median - n[1])
    lowest = baseline.layers if baseline.median < best.median else best.layers
    L = baseline.layers
    what = "the seed spread" if by_spread else "the stated one-seed margin"
    if pays:
        text = (
            f"depth pays at this budget: the {L}-layer baseline ends {best.median - baseline.median:.3f} "
            f"below the best fixed control ({layers_text(best.layers)}), more than {what} {need:.3f}"
        )
    elif best.median <= baseline.median:
        text = (
            f"depth does not pay at this budget: a fixed {best.layers}-layer model ends lowest; "
            "no growth speedup is claimed"
        )
    else:
        text = (
            f"depth does not pay at this budget: the {L}-layer baseline ends only "
            f"{tight.median - baseline.median:.3f} below a fixed {tight.layers}-layer model, "
            f"within {what} {need:.3f}; no growth speedup is claimed"
        )
    return DepthGate(
        "pays" if pays else "does-not-pay",
        baseline,
        ordered,
        best,
        lowest,
        need,
        by_spread,
        text,
    )


def layers_text(n: int) -> str:
    return f"{n} layer" if n == 1 else f"{n} layers"


def control_depths(final_layers: int) -> list[int]:
    """The default controls of a `final_layers` model: depth 1 and half depth (distinct,
    below full depth; none for a 1-layer model)."""
    return sorted({d for d in (1, final_layers // 2) if 1 <= d < final_layers})
