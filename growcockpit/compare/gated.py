"""The comparison with the depth gate applied: each run's role (baseline, control, run),
and a growth run's speedup claimed only where depth pays.

Where the target is a fixed full-depth run and fixed-size controls of it are among
the runs, the gate decides (compare/depth_gate.py). Depth does not pay: no run's
"sooner" is claimed, the measured ratio is kept in the JSON and said as measured only.
Depth pays: a growth run's verdict gives its ratio against the baseline and against
the best control (the control's own final loss as the target).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from growcockpit.compare.controls import control_depth, fixed_depth, run_gate
from growcockpit.compare.depth_gate import DepthGate
from growcockpit.compare.progress import RunProgress, plan_of
from growcockpit.compare.verdict import Verdict, verdict

UNGATED = "depth gate not applied: no fixed-size control of the target among the runs"


@dataclass(frozen=True)
class Gated:
    """The verdicts, each run's role and the gate (None: not applied, `note` says why)."""

    verdicts: list[Verdict]
    roles: list[str]
    gate: DepthGate | None
    note: str


def role(run: RunProgress, target: RunProgress) -> str:
    """ "target", "control (K layers)", "fixed (K layers)" or "" (a growth plan or unknown)."""
    if run is target:
        return "target"
    depth = control_depth(run.plan, target.plan)
    if depth is not None:
        return f"control ({depth} layer{'s' if depth > 1 else ''})"
    plan = plan_of(run.plan)
    depth = fixed_depth(plan) if plan is not None else None
    return f"fixed ({depth} layers)" if depth is not None else ""


def _best_control(runs: list[RunProgress], target: RunProgress, gate: DepthGate) -> RunProgress:
    """The best control arm's run that ends lowest."""
    assert gate.best_control is not None  # called where the gate pays
    arm = [
        r
        for r in runs
        if r.final_val_loss is not None
        and control_depth(r.plan, target.plan) == gate.best_control.layers
    ]
    return min(arm, key=lambda r: r.final_val_loss or 0.0)


def gated_verdicts(runs: list[RunProgress], target: RunProgress) -> Gated:
    """Every run's verdict against `target`, with the gate applied (module doc)."""
    plain = [verdict(r, target) for r in runs]
    roles = [role(r, target) for r in runs]
    gate = run_gate(runs, target)
    if gate is None:
        return Gated(plain, roles, None, UNGATED)
    out: list[Verdict] = []
    best = _best_control(runs, target, gate)
    for run, v, what in zip(runs, plain, roles, strict=True):
        if what or v.mismatches or v.reach is None:  # the target, fixed models, no claim
            out.append(v)
        elif not gate.pays:
            text = f"no growth speedup claimed (depth does not pay); measured: {v.text}"
            out.append(dataclasses.replace(v, text=text))
        else:
            vs = verdict(run, best)
            text = f"{v.text}; against the best control {best.name}: {vs.text}"
            out.append(dataclasses.replace(v, text=text))
    return Gated(out, roles, gate, gate.text)
