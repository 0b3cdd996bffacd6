"""The depth gate for a pinned baseline, from the user's other runs.

Why: a growth run's "1.4× sooner" against a pinned baseline means something only where the
full depth deserves itself at that budget. Runs the user already trained beside it (in the
same runs folder) may hold the answer: the baseline's model at fewer layers, one fixed
stage, on the same data, tokenizer, family and loss (compare/controls.py `control_depth`),
and other seeds of the baseline itself. When the pinned baseline has ended, these are found
and the gate (compare/depth_gate.py) is applied to the pin's line, no extra step asked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from growcockpit.compare import load_progress
from growcockpit.compare.controls import control_depth, is_baseline_seed, run_gate
from growcockpit.compare.depth_gate import DepthGate
from growcockpit.compare.progress import RunProgress
from growcockpit.protocol.safe_fs import RunDirError
from growcockpit.session.catalog import list_runs

ENDED = frozenset({"completed"})  # the catalog's status of a run that completed


@dataclass(frozen=True)
class PinGate:
    """The gate over the pinned baseline and the runs found beside it."""

    gate: DepthGate
    controls: tuple[str, ...]  # the control runs' names, shallowest first
    seeds: int  # runs of the baseline's own model (the baseline included)


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
        if control_depth(run.plan, baseline.plan) is not None or is_baseline_seed(
            run.plan, baseline.plan
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
    if gate is None:
        return None
    controls = sorted(
        (d, r.name) for r in runs if (d := control_depth(r.plan, baseline.plan)) is not None
    )
    seeds = 1 + sum(is_baseline_seed(r.plan, baseline.plan) for r in runs)
    return PinGate(gate, tuple(name for _, name in controls), seeds)


def gate_note(found: PinGate) -> str:
    """What the gate adds to the pin's line."""
    n = len(found.controls)
    where = f"{n} control run{'s' if n > 1 else ''} found ({', '.join(found.controls)})"
    if found.gate.pays:
        return f"depth pays: the baseline ends lowest against {where}"
    return f"{found.gate.text} ({where})"
