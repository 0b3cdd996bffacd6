"""The gate's size in one loan, computed from the probe's measurements (gpu_probe.py).

A control that is killed has no final loss, and a gate without every control is undecided:
so the gate's budget is not a constant but what the measured speed allows. Each method's
plan (bench/ttl/ttl_plans.py `budget_plan`, the same the benchmark trains) is priced stage by
stage at the ms per step measured alone at 1, half and full depth (linear in depth between
them), its evaluations included. The runs share the device only as far as the probe says they
fit: at most 1 / busy share of them at once (CUDA; a step that keeps the device busy 60 % of
its time leaves room for one more), within 80 % of its memory; on the CPU, one run a core.
The budget is the largest whose work, shared that way, plus the runs' start-ups, fits in the
phase's seconds with a safety factor; both families when both fit at a useful budget, else
one. Nothing here knows torch: it is arithmetic over the probe's records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

SAFETY = 1.5  # measured ms/step × this: sharing, evaluations' variance, a slower process
EVAL_SHARE = 0.15  # evaluations' cost as a share of a run's training steps (eval_batches small)
# A run's process costs this many import times beyond its steps (the imports, the tokenizer
# and token cache, evaluation set-up, the final save and teardown): on the loaded 2-core CPU,
# 25-42 s processes held 9-16 s of training at 12 s imports.
OVERHEAD_IMPORTS = 2.5


@dataclass(frozen=True)
class Probe:
    """What the probe measured: ms per step by depth (alone), start-up, sharing limits."""

    ms_by_depth: dict[int, float]
    startup_s: float
    busy: float | None  # the full-depth step's busy share (CUDA), None on the CPU
    peak_bytes: float | None
    memory_bytes: float | None
    cores: int

    @classmethod
    def from_records(cls, records: list[dict[str, Any]], cores: int) -> Probe | None:
        """From the probe's JSONL records; None when it measured no depth (cut or stopped)."""
        ladder = [r for r in records if r.get("kind") == "ladder"]
        if not ladder:
            return None
        full = max(ladder, key=lambda r: r["depth"])
        start = [r["seconds"] for r in records if r.get("kind") == "startup"]
        ver = next((r for r in records if r.get("kind") == "versions"), {})
        mem = ver.get("memory_gib")
        return cls(
            {int(r["depth"]): float(r["ms"]) for r in ladder},
            start[-1] if start else 30.0,
            full.get("busy"),
            full.get("peak_bytes"),
            mem * 2**30 if mem else None,
            cores,
        )

    def ms_at(self, depth: int) -> float:
        """ms per step at `depth` layers: measured, or linear between the measured depths."""
        pts = sorted(self.ms_by_depth.items())
        if depth <= pts[0][0]:
            return pts[0][1]
        for (d0, m0), (d1, m1) in zip(pts, pts[1:], strict=False):
            if d0 <= depth <= d1:
                return m0 + (m1 - m0) * (depth - d0) / (d1 - d0)
        (d0, m0), (d1, m1) = pts[-2:] if len(pts) > 1 else (pts[0], pts[0])
        return m1 if d1 == d0 else m1 + (m1 - m0) * (depth - d1) / (d1 - d0)

    @property
    def run_overhead_s(self) -> float:
        """A run's seconds beyond its steps, from the measured import time."""
        return OVERHEAD_IMPORTS * self.startup_s

    def lanes(self) -> int:
        """Runs at once on the device without slowing each other, by the probe's measures."""
        if self.busy is None:  # the CPU: one run a core, one thread each
            return max(1, self.cores)
        by_busy = max(1, int(0.9 / max(self.busy, 1e-3)))
        if self.peak_bytes and self.memory_bytes:
            return max(1, min(by_busy, int(0.8 * self.memory_bytes / self.peak_bytes)))
        return by_busy


@dataclass(frozen=True)
class GateSize:
    """The gate's shape in this loan: what `time_to_loss` is asked for, and why."""

    families: tuple[str, ...]
    budget: int  # full-depth baseline steps
    parallel: int  # runs at once, per family
    run_timeout_s: int
    expected_s: float  # start-ups and work, shared as sized, with the safety factor
    steps: dict[str, int]  # every method's steps at this budget (first family's plans)
    reason: str

    def line(self) -> str:
        steps = " ".join(f"{m}={s}" for m, s in self.steps.items())
        return (
            f"sizing: families={','.join(self.families) or 'none'} budget={self.budget} "
            f"parallel={self.parallel} run_timeout_s={self.run_timeout_s} "
            f"expected_s={self.expected_s:.0f} steps: {steps} ({self.reason})"
        )


def method_seconds(stages: list[tuple[int, int]], probe: Probe) -> float:
    """One run's training seconds: Σ steps × ms at the stage's depth, evaluations on top."""
    return sum(steps * probe.ms_at(layers) for layers, steps in stages) / 1e3 * (1 + EVAL_SHARE)


def plan_stages(method: str, scale: str, family: str, budget: int) -> list[tuple[int, int]]:
    """(layers, steps) of each stage of `method` at `budget` (the benchmark's own plan)."""
    from common import TTL_SIZES
    from ttl_plans import Budget, budget_plan

    size = TTL_SIZES[scale][family]
    plan = budget_plan(method, size, 0, Budget(budget, size.eval_every))
    return [(s.layers, s.steps) for s in plan.stages]


def wall_s(work_s: list[float], probe: Probe, parallel: int, families: int) -> float:
    """Wall seconds for the runs' training `work_s` (each alone), `parallel` at a time per
    family and the families at once: start-ups in waves, the work shared by the lanes."""
    lanes = max(1, probe.lanes())
    at_once = min(lanes, parallel * families)
    waves = math.ceil(len(work_s) * families / max(1, parallel * families))
    share = max(1.0, parallel * families / lanes)  # each run slowed when more than fit
    longest = max(work_s) * share
    total = sum(work_s) * families / at_once
    return waves * probe.run_overhead_s + max(longest, total) * SAFETY


def size_gate(
    probe: Probe,
    seconds: float,
    methods: list[str],
    scale: str,
    families: tuple[str, ...],
    min_budget: int,
    max_budget: int,
) -> GateSize:
    """The largest budget (a multiple of the scale's eval interval) whose runs all finish in
    `seconds`; both families if that budget is ≥ `min_budget` for both, else the first alone;
    budget 0 (nothing run) if even one family does not fit."""
    from common import TTL_SIZES

    step = TTL_SIZES[scale][families[0]].eval_every
    # two at once even where one fills the device: a run's start-up is host work that
    # overlaps the other's steps (its slowdown is priced in `wall_s`)
    parallel = max(1, min(len(methods), max(2, probe.lanes())))

    def fits(budget: int, fams: int) -> tuple[bool, float, dict[str, int]]:
        works, steps = [], {}
        for m in methods:
            try:
                stages = plan_stages(m, scale, families[0], budget)
            except ValueError:  # the plan cannot be made at so small a budget
                return False, math.inf, {}
            works.append(method_seconds(stages, probe))
            steps[m] = sum(s for _, s in stages)
        per = max(1, parallel // fams)
        need = wall_s(works, probe, per, fams)
        return need <= seconds, need, steps

    for fams in (families, families[:1]):
        per = max(1, parallel // len(fams))
        # the largest multiple of `step` that fits, scanning down (a budget too small for a
        # method's plan fails too, so the test is not monotonic at the low end)
        for budget in range(max_budget - max_budget % step, min_budget - 1, -step):
            ok, need, steps = fits(budget, len(fams))
            if ok:
                timeout = int(max(need, seconds * 0.9))
                why = (
                    f"{len(fams)} famil{'ies' if len(fams) > 1 else 'y'} fit: "
                    f"{need:.0f} s of {seconds:.0f} s by the probe's "
                    f"{probe.ms_at(max(probe.ms_by_depth)):.1f} ms/step full depth alone, "
                    f"{probe.lanes()} lane(s), {probe.run_overhead_s:.0f} s a process beyond its steps"
                )
                return GateSize(fams, budget, per, timeout, need, steps, why)
    need_min = fits(min_budget, 1)[1]  # what the smallest useful gate would take
    return GateSize(
        (),
        0,
        parallel,
        0,
        need_min,
        {},
        f"does not fit: {min_budget} steps need ≈ {need_min:.0f} s, {seconds:.0f} s left",
    )
