"""Which runs are fixed-size controls of a baseline, and the depth gate over a set of runs.

A control is the baseline's final architecture at fewer layers, trained as one stage
with every part training (no growth, nothing frozen), measuring the same loss. With
controls among the compared runs, `compare` labels them and applies the depth gate
(compare/depth_gate.py): seeds of one depth form one arm.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from growcockpit.compare.comparable import mismatches
from growcockpit.compare.depth_gate import DepthArm, DepthGate, depth_gate
from growcockpit.compare.progress import RunProgress, plan_of
from growcockpit.plan import Plan


def fixed_depth(plan: Plan) -> int | None:
    """The depth of a plan that trains one fixed model (one `init` stage at the final
    depth and width, everything training); None for a growth plan or a partial one."""
    if len(plan.stages) != 1:
        return None
    s = plan.stages[0]
    whole = (
        s.enter == "init"
        and s.train == "all"
        and s.layers == plan.model.final_layers
        and s.width in (None, plan.model.hidden_size)
        and s.embeddings != "frozen"
        and s.head == "train"
        and s.layer_drop == 0.0
    )
    return s.layers if whole else None


def control_depth(plan: Mapping[str, Any], baseline: Mapping[str, Any]) -> int | None:
    """The depth of `plan` when it is a fixed-size control of the fixed full-depth
    `baseline` (the same model but for fewer layers, the same measured loss); else None."""
    mine, base = plan_of(plan), plan_of(baseline)
    if mine is None or base is None or fixed_depth(base) is None:
        return None
    depth = fixed_depth(mine)
    if depth is None or depth >= base.model.final_layers or mismatches(plan, baseline):
        return None
    same_model = dataclasses.replace(mine.model, final_layers=base.model.final_layers)
    return depth if same_model == base.model else None


SAME_LENGTH = 0.95  # a run of the baseline's model with fewer steps than this share is shorter


def _same_model(plan: Mapping[str, Any], baseline: Mapping[str, Any]) -> tuple[int, int] | None:
    """(its steps, the baseline's) when `plan` trains the baseline's fixed model."""
    mine, base = plan_of(plan), plan_of(baseline)
    if mine is None or base is None or fixed_depth(mine) is None or fixed_depth(base) is None:
        return None
    if mine.model != base.model or mismatches(plan, baseline):
        return None
    return mine.total_steps, base.total_steps


def is_baseline_seed(plan: Mapping[str, Any], baseline: Mapping[str, Any]) -> bool:
    """`plan` trains the baseline's fixed model too, on its schedule's length (another seed
    or LR of it)."""
    steps = _same_model(plan, baseline)
    return steps is not None and steps[0] >= SAME_LENGTH * steps[1]


def short_fraction(plan: Mapping[str, Any], baseline: Mapping[str, Any]) -> float | None:
    """The share of the baseline's steps `plan` trains when it is a short-schedule control
    of it: the baseline's fixed model, its own schedule over fewer steps; else None."""
    steps = _same_model(plan, baseline)
    if steps is None or steps[1] <= 0 or steps[0] >= SAME_LENGTH * steps[1]:
        return None
    return steps[0] / steps[1]


def run_gate(runs: Sequence[RunProgress], baseline: RunProgress) -> DepthGate | None:
    """The depth gate over `runs` with `baseline` (a fixed full-depth run) as the full
    depth: its seeds are the runs of its model, the controls' arms the runs of each
    smaller depth. A control among the runs that has not completed (training, stopped,
    crashed) leaves the gate undecided. None without a control or a final loss to judge."""
    if baseline.final_val_loss is None or baseline.status != "completed":
        return None
    base = [baseline.final_val_loss]
    arms: dict[int, list[float]] = {}
    needed: set[int] = set()
    for run in runs:
        final = run.final_val_loss
        if run is baseline:
            continue
        depth = control_depth(run.plan, baseline.plan)
        if depth is not None:
            needed.add(depth)
        if final is None or run.status != "completed":
            continue
        if depth is not None:
            arms.setdefault(depth, []).append(final)
        elif is_baseline_seed(run.plan, baseline.plan):
            base.append(final)
    if not needed:
        return None
    layers = fixed_depth(plan_of(baseline.plan))  # type: ignore[arg-type]
    assert layers is not None
    controls = [DepthArm(d, tuple(v)) for d, v in sorted(arms.items())]
    return depth_gate(DepthArm(layers, tuple(base)), controls, needed=sorted(needed))
