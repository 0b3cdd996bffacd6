"""The depth gate in the time-to-loss benchmark: baseline against the fixed-size controls.

The controls (`depth-1` and half depth by default: growcockpit.compare.depth_gate
`control_depths`) train the final model at fewer layers for the same budget. The gate
(the product's `depth_gate`, per seed final validation losses) decides whether a growth
speedup may be claimed at this scale: where depth does not pay, the last line says
`unclaimed` in place of every growth method's speedup (the measured ratio beside it);
where it pays, each growth method's speedup against the best control is added, measured
as against the baseline (time and FLOPs to the control's own final loss).
"""

from __future__ import annotations

import re
import statistics
from typing import Any

from ttl_plans import DEPTH, FULL_AT

from growcockpit.compare.depth_gate import (
    DepthArm,
    DepthGate,
    control_depths,
    depth_gate,
    layers_text,
)

BASELINES = re.compile(r"^baseline(-|$)")


def control_methods(layers: int) -> list[str]:
    """The controls the benchmark runs by default for a `layers`-deep final model."""
    return [f"depth-{d}" for d in control_depths(layers)]


def is_reference(method: str) -> bool:
    """A baseline or a fixed-size control: a row that is no growth recipe."""
    return bool(BASELINES.match(method) or DEPTH.match(method) or FULL_AT.match(method))


def bench_gate(
    runs: list[dict[str, dict[str, Any]]], layers: int, needed: tuple[int, ...] = ()
) -> DepthGate | None:
    """The gate over the seeds' final validation losses. `needed`: the control depths the
    bench asked for; one that did not finish on every seed makes the gate undecided (never
    "pays"). None only without a finished baseline, or with no control asked for or run."""
    base: list[float] = []
    arms: dict[int, list[float]] = {}
    for run in runs:
        for method, res in run.items():
            final = res.get("final_val_loss")
            if final is None:
                continue
            if method == "baseline":
                base.append(final)
            elif (m := DEPTH.match(method)) and int(m.group(1)) < layers:
                arms.setdefault(int(m.group(1)), []).append(final)
    if not base or not (arms or needed):
        return None
    controls = [DepthArm(d, tuple(v)) for d, v in sorted(arms.items())]
    return depth_gate(DepthArm(layers, tuple(base)), controls, needed=needed, seeds=len(runs))


def against_control(
    runs: list[dict[str, dict[str, Any]]], control: str, first_reach: Any
) -> dict[str, dict[str, float]]:
    """Per growth method, the median over seeds of its speedups (wall, FLOPs) to the
    control's final loss against the control itself (a seed not reached counts 0)."""
    per: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        ctl = run.get(control)
        if not ctl or ctl.get("final_val_loss") is None:
            continue
        target = ctl["final_val_loss"]
        own = first_reach(ctl["evals"], target)
        for method, res in run.items():
            if is_reference(method) or res.get("final_val_loss") is None or own is None:
                continue
            reach = first_reach(res["evals"], target)
            row = per.setdefault(method, {"wall": [], "flops": []})
            for k, key in (("wall", "wall_s"), ("flops", "flops")):
                row[k].append(own[key] / reach[key] if reach and reach[key] > 0 else 0.0)
    return {m: {k: statistics.median(v) for k, v in row.items()} for m, row in per.items()}


def gate_report(
    family: str, gate: DepthGate | None, vs_control: dict[str, dict[str, float]]
) -> list[str]:
    """The lines printed under the family's tables."""
    if gate is None:
        return [f"== {family}: depth gate not applied (no fixed-size control ran)"]
    lines = [f"== {family}: {gate.text}"]
    if gate.best_control is None:
        return lines
    arms = [gate.baseline, *gate.controls]
    lines.append(
        "   final val loss, median (min–max) over seeds: "
        + "; ".join(
            f"{layers_text(a.layers)} {a.median:.3f} ({min(a.final_losses):.3f}–{max(a.final_losses):.3f})"
            for a in arms
        )
    )
    for method, row in vs_control.items():
        assert gate.best_control is not None
        lines.append(
            f"   {method:<28} to depth-{gate.best_control.layers}'s final loss: "
            f"{row['wall']:.2f}x wall, {row['flops']:.2f}x FLOPs (median)"
        )
    return lines


def gated_items(items: list[str], gate: DepthGate | None, family: str) -> list[str]:
    """The last line's items with the gate: `<family>.depth_gate=pays|does_not_pay` and the
    best fixed depth first; where depth does not pay, each growth method's speedup reads
    `unclaimed(<measured>)` (undecided: `depth_gate=undecided`, the same marks)."""
    if gate is None:
        return items
    head = [f"{family}.depth_gate={gate.status.replace('-', '_')}"]
    if not gate.undecided:
        head.append(f"{family}.best_fixed_depth={gate.lowest_layers}")
    if gate.pays:
        return head + items
    out = []
    for item in items:
        parts = []
        for part in item.split(" "):
            key, _, value = part.partition("=")
            method = key.split(".", 1)[-1]
            growth = not method.startswith(("baseline", "depth_", "full_"))
            speed = "_speedup" in key
            parts.append(f"{key}=unclaimed({value})" if growth and speed else part)
        out.append(" ".join(parts))
    return head + out
