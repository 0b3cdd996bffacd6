"""The comparison with every control applied: each run's role (baseline, short schedule,
control, run), and a growth run's speedup claimed only where it holds (compare/claim.py).

Where the target is a fixed full-depth run and controls of it are among the runs
(the same model on a shorter schedule, the same model at fewer layers), a growth run's
speedup is claimed only where it beats the full model's envelope and every smaller fixed
model on every seed, with the depth gate deciding whether depth pays at all
(compare/depth_gate.py). Otherwise its verdict reads "no growth speedup claimed: <why>;
measured: <the ratio>", the ratio kept in the JSON. Without any control among the runs
the measured ratio is shown as before and the note says no gate was applied.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from growcockpit.compare.claim import GrowthClaim, claim_text
from growcockpit.compare.controls import control_depth, fixed_depth, run_gate, short_fraction
from growcockpit.compare.depth_gate import DepthGate
from growcockpit.compare.envelope import Metric
from growcockpit.compare.progress import RunProgress, plan_of
from growcockpit.compare.run_claims import run_claims
from growcockpit.compare.verdict import Verdict, verdict

UNGATED = "depth gate not applied: no fixed-size control of the target among the runs"


@dataclass(frozen=True)
class Gated:
    """The verdicts, each run's role and the gate (None: not applied, `note` says why)."""

    verdicts: list[Verdict]
    roles: list[str]
    gate: DepthGate | None
    note: str
    claims: dict[str, GrowthClaim] | None = None  # per growth run's name; None: no control


def role(run: RunProgress, target: RunProgress) -> str:
    """ "target", "control (K layers)", "short schedule (full@F)", "fixed (K layers)" or ""
    (a growth plan or unknown)."""
    if run is target:
        return "target"
    share = short_fraction(run.plan, target.plan)
    if share is not None:
        return f"short schedule (full@{share:.2g})"
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


def gated_verdicts(
    runs: list[RunProgress],
    target: RunProgress,
    metric: Metric = "val_loss",
    value: float | None = None,
) -> Gated:
    """Every run's verdict against `target`, with the controls applied (module doc);
    `metric`/`value`: the claims' target (default: the target run's final val loss)."""
    plain = [verdict(r, target) for r in runs]
    roles = [role(r, target) for r in runs]
    gate = run_gate(runs, target)
    short = [r for r, what in zip(runs, roles, strict=True) if what.startswith("short")]
    if gate is None and not short:
        return Gated(plain, roles, None, UNGATED)
    growth = [
        r for r, v, what in zip(runs, plain, roles, strict=True) if not what and not v.mismatches
    ]
    found = run_claims(runs, target, gate, growth, metric, value)
    out: list[Verdict] = []
    best = _best_control(runs, target, gate) if gate is not None and gate.pays else None
    for run, v in zip(runs, plain, strict=True):
        claim = found.claims.get(run.name)
        if claim is None or run not in growth:
            out.append(v)
            continue
        measured = v.text
        if best is not None and v.reach is not None:
            measured += f"; against the best control {best.name}: {verdict(run, best).text}"
        out.append(dataclasses.replace(v, text=claim_text(claim, measured)))
    notes = [gate.text] if gate is not None else [UNGATED]
    if short:
        notes.append("short schedules of the target: " + ", ".join(r.name for r in short))
    return Gated(out, roles, gate, "; ".join(notes), found.claims)
