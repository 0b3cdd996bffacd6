"""The LR sweep of the time-to-loss benchmark: every method at its own best peak LR.

A growth plan and the baseline need not want the same LR: shallow stages tolerate a
higher one, and a baseline trained at a better LR takes part of a growth plan's lead
away (README, "an LR check"). A fair comparison tunes both. `--lrs 1e-3,2e-3,3e-3`
trains every method at every peak LR (`optim.lr`; a stage's own LR is scaled by the
same factor, so a V-cycle's coarse level keeps its 4×), picks per method the LR with
the lowest median final validation loss over the seeds, and compares the methods at
those LRs: the target is then the best baseline's final loss. The pick uses the seeds
it reports on, which favours every method alike, the baseline included (the usual
tuned-baseline protocol); the sweep table shows every LR, so nothing is hidden.

A method's run at its plan's own LR keeps the plain label (and run directory), so runs
of an earlier invocation without `--lrs` are reused; other LRs are `<label>@lr<value>`.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import Any

from growcockpit.plan.types import Plan


def parse_lrs(text: str) -> list[float]:
    """`"1e-3,2e-3"` → [0.001, 0.002]; ValueError with the bad item named."""
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            lr = float(item)
        except ValueError:
            raise ValueError(f"--lrs: {item!r} is not a number; e.g. --lrs 1e-3,2e-3") from None
        if not 0 < lr < 1:
            raise ValueError(f"--lrs: {item} is not a peak LR in (0, 1)")
        out.append(lr)
    if not out:
        raise ValueError("--lrs: no LR given; e.g. --lrs 1e-3,2e-3,3e-3")
    return sorted(set(out))


def with_lr(plan: Plan, lr: float) -> Plan:
    """`plan` at peak LR `lr`; stage LRs scaled by the same factor (their ratio kept)."""
    factor = lr / plan.optim.lr
    stages = [replace(s, lr=None if s.lr is None else s.lr * factor) for s in plan.stages]
    return replace(plan, optim=replace(plan.optim, lr=lr), stages=stages)


def lr_label(label: str, lr: float, own_lr: float) -> str:
    return label if math.isclose(lr, own_lr, rel_tol=1e-9) else f"{label}@lr{lr:g}"


@dataclass(frozen=True)
class Variant:
    """One method at one LR: the label its run is stored (and its result keyed) under."""

    method: str
    lr: float
    label: str


def expand(plans: list[tuple[str, Plan]], lrs: list[float]) -> list[tuple[Variant, Plan]]:
    """Every (method, plan) at every LR of the sweep, in method order; no LRs: each at its own."""
    return [
        (Variant(method, lr, lr_label(method, lr, plan.optim.lr)), with_lr(plan, lr))
        for method, plan in plans
        for lr in (lrs or [plan.optim.lr])
    ]


def _final(res: dict[str, Any] | None) -> float:
    """The run's final val loss; inf when it has none or diverged (never the best)."""
    if not res or not res.get("evals"):
        return math.inf
    v = float(res["evals"][-1]["val_loss"])
    return v if math.isfinite(v) else math.inf


def pick_best(
    variants: list[Variant], results: dict[tuple[str, int], dict[str, Any]], seeds: list[int]
) -> tuple[dict[str, Variant], dict[str, dict[str, Any]]]:
    """Per method, the variant with the lowest median final val loss; and the sweep table.

    The table maps method → {"lrs": {"<lr>": median final val or None}, "best_lr": lr}. A
    method none of whose LRs has a result is left out of both.
    """
    best: dict[str, Variant] = {}
    table: dict[str, dict[str, Any]] = {}
    by_method: dict[str, list[Variant]] = {}
    for v in variants:
        by_method.setdefault(v.method, []).append(v)
    for method, vs in by_method.items():
        medians: dict[str, float | None] = {}
        scored = []
        for v in vs:
            finals = [_final(results.get((v.label, s))) for s in seeds if (v.label, s) in results]
            if not finals:
                medians[f"{v.lr:g}"] = None
                continue
            med = statistics.median(finals)
            medians[f"{v.lr:g}"] = med if math.isfinite(med) else None
            scored.append((med, v.lr, v))
        if not scored:
            continue
        chosen = min(scored, key=lambda t: (t[0], t[1]))[2]
        best[method] = chosen
        table[method] = {"lrs": medians, "best_lr": chosen.lr}
    return best, table


def tuned_baseline(
    best: dict[str, Variant], table: dict[str, dict[str, Any]], others: tuple[str, ...]
) -> tuple[dict[str, Variant], str]:
    """The target is the best of the baseline's schedules: `baseline` (linear) and `others`
    (e.g. `baseline-wsd`), each already at its best LR; the winner by median final val loss
    becomes `baseline`, the linear one then stays as `baseline-linear`. (new best, winner)."""
    if "baseline" not in best:
        return best, "baseline"

    def median(method: str) -> float:
        v = table[method]["lrs"].get(f"{best[method].lr:g}")
        return math.inf if v is None else float(v)

    rivals = [m for m in others if m in best]
    winner = min(["baseline", *rivals], key=median)
    if winner == "baseline":
        return best, winner
    out = {"baseline": best[winner], "baseline-linear": best["baseline"]}
    out.update({m: v for m, v in best.items() if m not in ("baseline", winner)})
    return out, winner


def runs_at_best(
    best: dict[str, Variant],
    results: dict[tuple[str, int], dict[str, Any]],
    seeds: list[int],
) -> dict[int, dict[str, dict[str, Any]]]:
    """Per seed, each method's result at its best LR, under the method's own name."""
    out: dict[int, dict[str, dict[str, Any]]] = {}
    for seed in seeds:
        run = {}
        for method, v in best.items():
            if (v.label, seed) in results:
                run[method] = dict(results[(v.label, seed)], lr=v.lr)
        out[seed] = run
    return out


def _cells(row: dict[str, Any], lrs: list[float]) -> list[tuple[str, bool]]:
    """A sweep row's median at each LR ("-" where none), and whether it is the picked LR."""
    out = []
    for lr in lrs:
        v = row["lrs"].get(f"{lr:g}")
        out.append(("-" if v is None else f"{v:.3f}", math.isclose(lr, row["best_lr"])))
    return out


def _columns(table: dict[str, dict[str, Any]]) -> list[float]:
    return sorted({float(lr) for row in table.values() for lr in row["lrs"]})


def sweep_table(table: dict[str, dict[str, Any]]) -> list[str]:
    """Median final val loss per method and LR, the best LR marked with *."""
    lrs = _columns(table)
    head = f"{'method':<28}" + "".join(f"{f'lr {lr:g}':>12}" for lr in lrs)
    lines = [head, "-" * len(head)]
    for method, row in table.items():
        cells = [f"{text}{'*' if best else ' '}".rjust(12) for text, best in _cells(row, lrs)]
        lines.append(f"{method:<28}" + "".join(cells))
    return lines


def sweep_markdown(table: dict[str, dict[str, Any]], family: str) -> list[str]:
    lrs = _columns(table)
    out = [
        f"| {family} method | " + " | ".join(f"lr {lr:g}" for lr in lrs) + " |",
        "|---|" + "---|" * len(lrs),
    ]
    for method, row in table.items():
        cells = [f"**{text}**" if best else text for text, best in _cells(row, lrs)]
        out.append(f"| {method} | " + " | ".join(cells) + " |")
    return out


@dataclass(frozen=True)
class BaselineLR:
    """Whether the target baseline's peak LR was chosen by a sweep, said where it is quoted.

    Why: a speedup against a baseline at one untuned LR flatters growth (at the cpu scale
    GPT-2's baseline at 1e-3 made a recipe read 5.25× where the baseline at its best LR,
    3e-3, left 1.5×), and the summary line is the number people copy. So every summary
    says which it was, and a pick at the edge of the sweep says the sweep may be too narrow.
    """

    lr: float
    swept: tuple[float, ...]
    source: str = "the scale's default"  # where a single LR came from: "--lr" or the default

    @property
    def tuned(self) -> bool:
        return len(self.swept) >= 2

    @property
    def at_edge(self) -> bool:
        return self.tuned and (
            math.isclose(self.lr, min(self.swept)) or math.isclose(self.lr, max(self.swept))
        )

    def item(self, family: str) -> str:
        """The summary-line key: `<family>.baseline_lr=tuned(3e-3)` or `=untuned(1e-3)`."""
        return f"{family}.baseline_lr={'tuned' if self.tuned else 'untuned'}({self.lr:g})"

    def line(self, family: str) -> str:
        if not self.tuned:
            return (
                f"== {family}: the baseline's LR was NOT tuned here (one LR, {self.lr:g}, "
                f"{self.source}): unless an earlier sweep picked it, these speedups are against "
                "an untuned baseline and may flatter growth; pass --lrs (e.g. --lrs "
                "1e-3,3e-3,6e-3) to compare every method at its best LR"
            )
        edge = (
            ", at the edge of the sweep: widen --lrs, a better LR may lie beyond it"
            if self.at_edge
            else ""
        )
        swept = ", ".join(f"{lr:g}" for lr in self.swept)
        return f"== {family}: the baseline's LR was tuned: {self.lr:g}, best of {swept}{edge}"

    def as_json(self) -> dict[str, Any]:
        return {"lr": self.lr, "swept": list(self.swept), "tuned": self.tuned}
