"""The depth gate for a pinned baseline, from the user's other runs.

Why: a growth run's "1.4× sooner" against a pinned baseline means something only where the
full depth deserves itself at that budget. Runs the user already trained beside it (in the
same runs folder) may hold the answer: the baseline's model at fewer layers, one fixed
stage, on the same data, tokenizer, family and loss (compare/controls.py `control_depth`),
and other seeds of the baseline itself, and the baseline's model trained for fewer steps
(a short schedule, `full@0.5`: compare/controls.py `short_fraction`). When the pinned
baseline has ended, these are found, the gate (compare/depth_gate.py) is applied to the
pin's line, and a growth run's speedup is said as measured, never claimed, where a short
schedule or a smaller model reaches the baseline's loss sooner (compare/claim.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from growcockpit.compare import load_progress
from growcockpit.compare.claim import GrowthClaim, SeedCosts, growth_claim
from growcockpit.compare.controls import control_depth, is_baseline_seed, run_gate, short_fraction
from growcockpit.compare.depth_gate import DepthGate
from growcockpit.compare.envelope import Cost, CurvePoint, Target, cost_to, envelope, points
from growcockpit.compare.progress import RunProgress
from growcockpit.protocol.safe_fs import RunDirError
from growcockpit.session.catalog import list_runs

ENDED = frozenset({"completed"})  # the catalog's status of a run that completed


@dataclass(frozen=True)
class PinGate:
    """The gate over the pinned baseline and the runs found beside it."""

    gate: DepthGate | None  # None: no fixed-size control found (short schedules only)
    controls: tuple[str, ...]  # the control runs' names, shallowest first
    seeds: int  # runs of the baseline's own model (the baseline included)
    runs: tuple[RunProgress, ...] = ()  # every control, seed and short schedule found
    short: tuple[str, ...] = ()  # the short-schedule runs' names


def _found(baseline: RunProgress, runs_root: Path, skip: set[Path]) -> list[RunProgress]:
    """Ended runs under `runs_root` that are controls or seeds of `baseline`."""
    out = []
    for entry in list_runs(runs_root):
        if entry.status not in ENDED or entry.path.resolve() in skip:
            continue
        try:
            run = load_progress(entry.path)
        except (OSError, RunDirError, ValueError):
            continue  # an unreadable run is not a control; the catalog already flags it
        if (
            control_depth(run.plan, baseline.plan) is not None
            or is_baseline_seed(run.plan, baseline.plan)
            or short_fraction(run.plan, baseline.plan) is not None
        ):
            out.append(run)
    return out


def pin_gate(
    baseline_dir: Path, baseline: RunProgress, runs_root: Path, exclude: Iterable[Path] = ()
) -> PinGate | None:
    """The gate for `baseline` (read from `baseline_dir`) with the controls found under
    `runs_root` (`exclude`: the watched run, judged on its own line); None while the
    baseline trains or when no control of it is there."""
    if baseline.status != "completed":
        return None
    skip = {Path(p).resolve() for p in (baseline_dir, *exclude)}
    runs = _found(baseline, Path(runs_root), skip)
    gate = run_gate(runs, baseline)
    short = tuple(r.name for r in runs if short_fraction(r.plan, baseline.plan) is not None)
    if gate is None and not short:
        return None
    controls = sorted(
        (d, r.name) for r in runs if (d := control_depth(r.plan, baseline.plan)) is not None
    )
    seeds = 1 + sum(is_baseline_seed(r.plan, baseline.plan) for r in runs)
    names = tuple(name for _, name in controls)
    return PinGate(gate, names, seeds, tuple(runs), short)


def gate_note(found: PinGate) -> str:
    """What the gate adds to the pin's line."""
    n = len(found.controls)
    where = f"{n} control run{'s' if n > 1 else ''} found ({', '.join(found.controls)})"
    if found.gate is None:
        return f"no fixed-size control found; short schedules: {', '.join(found.short)}"
    if found.gate.pays:
        return f"depth pays: the baseline ends lowest against {where}"
    return f"{found.gate.text} ({where})"


def pin_claim(
    found: PinGate, baseline: RunProgress, grown: list[CurvePoint], target: float
) -> GrowthClaim:
    """The watched growth run's claim (one seed: it never holds, but a control that
    reaches `target` sooner is named): `grown` is its val loss against FLOPs and training
    seconds; the envelope is the pinned baseline's and the short schedules' curves."""
    goal = Target("val_loss", target)
    full = {"the pinned baseline": points(baseline.evals, "val_loss")}
    fixed: dict[str, Cost | None] = {}
    for run in found.runs:
        share = short_fraction(run.plan, baseline.plan)
        depth = control_depth(run.plan, baseline.plan)
        if run.status != "completed":
            continue
        if share is not None:
            full[f"full@{share:.2g} {run.name}"] = points(run.evals, "val_loss")
        elif depth is not None:
            fixed[f"depth-{depth} {run.name}"] = cost_to(points(run.evals, "val_loss"), goal)
    missing = [r.name for r in found.runs if r.status != "completed"]
    seed = SeedCosts(0, cost_to(grown, goal), envelope(full, goal), fixed)
    return growth_claim([seed], goal, found.gate, missing)
