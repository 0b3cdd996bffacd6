"""A baseline run pinned to a live dashboard: its validation curve under the run's own,
and whether (and how much sooner) the run has reached the baseline's final loss.

Why: the question a growth run is watched for is "is it paying?", and the compare
screen answers it only after the fact, by leaving the run. Pinned, the baseline's
validation loss is drawn on the loss plot on the same x axis (step, tokens, training
time, estimated FLOPs, counted as `growcockpit compare` counts them), and one line
says where the run stands against it. A pin is remembered per run in the cockpit's
settings, so a re-attach shows it again; the baseline is re-read while its log grows.

Nothing here knows Textual; the dashboard loads pins in a worker.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from growcockpit.compare import EvalPoint, load_progress
from growcockpit.compare.claim import GrowthClaim, claim_text
from growcockpit.compare.comparable import mismatches
from growcockpit.compare.controls import control_depth, fixed_depth
from growcockpit.compare.depth_gate import DepthArm, depth_gate
from growcockpit.compare.envelope import CurvePoint
from growcockpit.compare.progress import RunProgress, plan_of
from growcockpit.protocol.rundir import RunPaths
from growcockpit.protocol.safe_fs import RunDirError
from growcockpit.session.catalog import RunEntry, list_runs
from growcockpit.session.compare_view import point_x
from growcockpit.session.fold.axes import Axis
from growcockpit.session.fold.state import RunData
from growcockpit.session.pin_controls import PinGate, gate_note, pin_claim, pin_gate
from growcockpit.session.plot_view import PINNED_SERIES, to_axis
from growcockpit.session.settings import load_settings, save_settings

SETTINGS_KEY = "pinned_baselines"  # {run directory: baseline run directory}
SERIES = PINNED_SERIES  # the name the dashboard's `/` filter matches


@dataclass(frozen=True)
class PinnedBaseline:
    """A baseline run's evaluations, as read at `mtime_ns` of its event log."""

    path: Path
    name: str
    evals: tuple[EvalPoint, ...]
    status: str = "running"
    mtime_ns: int = 0
    plan: dict[str, Any] = field(default_factory=dict)  # as launched: what its loss measures
    found: PinGate | None = None  # the depth gate with controls among the user's runs

    @property
    def final(self) -> float | None:
        """The target: the baseline's latest validation loss (its final one once it ended)."""
        finite = [e.val_loss for e in self.evals if math.isfinite(e.val_loss)]
        return finite[-1] if finite else None

    def curve(self, axis: Axis) -> tuple[list[float], list[float]]:
        """The baseline's validation loss on `axis` (points without a value there left out)."""
        xs: list[float] = []
        ys: list[float] = []
        for e in self.evals:
            x = point_x(e, axis)
            if x is not None and math.isfinite(e.val_loss):
                xs.append(x)
                ys.append(e.val_loss)
        return xs, ys

    def label(self) -> str:
        return self.name if "baseline" in self.name.lower() else f"baseline {self.name}"


def events_mtime_ns(run_dir: Path) -> int:
    """The baseline's event log's mtime (0 when missing): whether to read it again."""
    try:
        return RunPaths(Path(run_dir)).events.stat().st_mtime_ns
    except OSError:
        return 0


def load_pinned(
    run_dir: Path, runs_root: Path | None = None, exclude: tuple[Path, ...] = ()
) -> PinnedBaseline:
    """Read a baseline run; ValueError (one line, naming the run and the fix) when it
    cannot be one: unreadable, unsafe, or ended without a single evaluation. A baseline
    still training without one is pinned all the same: its curve appears with its first.
    With `runs_root`, an ended baseline's fixed-size controls and other seeds are looked
    for among the runs there (`exclude`: the watched run) and the depth gate applied."""
    path = Path(run_dir)
    if not path.is_dir():
        raise ValueError(f"{path}: no such run (moved or deleted?); press B to pin another")
    mtime = events_mtime_ns(path)
    try:
        progress = load_progress(path)
    except (OSError, RunDirError) as exc:
        why = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
        raise ValueError(f"{path}: cannot pin it as the baseline ({why})") from None
    if not progress.evals and progress.status != "running":
        raise ValueError(
            f"{path.name}: ended ({progress.status}) without a validation loss, so nothing to "
            "compare with; pin a run that evaluates (metrics.eval_every_steps)"
        )
    evals = tuple(progress.evals)
    found = None if runs_root is None else pin_gate(path, progress, runs_root, exclude)
    return PinnedBaseline(path, path.name, evals, progress.status, mtime, progress.plan, found)


def candidates(runs_root: Path, current: Path) -> list[RunEntry]:
    """Runs that may be pinned to `current`: every other run under `runs_root`, the ones
    named a baseline (run or plan) first, then as Home lists them (live, then newest)."""
    here = Path(current).resolve()
    runs = [r for r in list_runs(runs_root) if r.path.resolve() != here]
    return sorted(runs, key=lambda r: not _named_baseline(r))


def _named_baseline(entry: RunEntry) -> bool:
    return "baseline" in entry.name.lower() or "baseline" in entry.plan.lower()


def standing(pin: PinnedBaseline, state: RunData, axis: Axis) -> str:
    """One line on where the run stands against the pinned baseline, on `axis`: when it
    first reached the baseline's final validation loss and how much sooner (or later) than
    the baseline got there, or how far above it the run's latest validation loss still is."""
    target = pin.final
    if target is None:
        return f"{pin.label()}: no validation loss yet"
    head = f"{pin.label()} {'final' if pin.status != 'running' else 'latest'} {target:.3f}"
    found = mismatches(state.plan_dict, pin.plan)
    if found:
        facts = "; ".join(m.text for m in found)
        return f"{head}: not comparable ({facts}): a different loss, no ratio"
    gate = _gate(pin, state)
    if gate is not None:
        return f"{head}: this run is a control, {gate}"
    if pin.found is None:
        return _against(pin, state, axis, head, target, True)
    claim = _claim(pin, state, target)
    depth = pin.found.gate
    claimed = claim.claimed if claim is not None else depth is not None and depth.pays
    line = _against(pin, state, axis, head, target, claimed)
    if claim is not None and (claim.winner is not None or claim.status == "undecided"):
        why = claim_text(claim, "").split("; measured:")[0]
        return f"{line}; {why}"
    extra = "; one seed: not a result" if claim is not None and not claim.claimed else ""
    return f"{line}; {gate_note(pin.found)}{extra}"


def _claim(pin: PinnedBaseline, state: RunData, target: float) -> GrowthClaim | None:
    """The watched run's claim against the controls found beside the pin (None: the run
    trains a fixed model itself, or the pin has no run record to measure the envelope)."""
    mine = plan_of(state.plan_dict)
    if pin.found is None or (mine is not None and fixed_depth(mine) is not None):
        return None
    steps = [float(s) for s in state.val.xs]
    flops = to_axis(state, "flops", steps)
    wall = to_axis(state, "time", steps)
    grown = [CurvePoint(f, w, v) for f, w, v in zip(flops, wall, state.val.ys, strict=False)]
    base = RunProgress(pin.name, evals=list(pin.evals), plan=pin.plan, status=pin.status)
    return pin_claim(pin.found, base, grown, target)


def _against(
    pin: PinnedBaseline, state: RunData, axis: Axis, head: str, target: float, claimed: bool
) -> str:
    """The line without the gate; `claimed` False: depth does not pay, so a ratio is kept
    visible but said as measured, not as a speedup."""
    steps = [float(s) for s, v in zip(state.val.xs, state.val.ys, strict=True) if v <= target]
    if not steps:
        if not state.val.ys:
            return f"{head}: this run has no validation loss yet"
        gap = state.val.ys[-1] - target
        return f"{head}: not reached, this run's val {state.val.ys[-1]:.3f} ({gap:+.3f})"
    reached = to_axis(state, axis, steps[:1])[0]
    base_xs, _ = pin.curve(axis)
    where = _fmt(axis, reached)
    if not base_xs or reached <= 0:
        return f"{head}: reached at {where}"
    ratio = base_xs[-1] / reached
    sooner = "sooner" if claimed else "sooner (measured)"
    pace = f"{ratio:.2f}× {sooner}" if ratio >= 1.0 else f"{1.0 / ratio:.2f}× later"
    return f"{head}: reached at {where}, {pace}"


def _gate(pin: PinnedBaseline, state: RunData) -> str | None:
    """The depth gate's line when this run is a fixed-size control of the pinned baseline
    (compare/controls.py) and both have ended: one seed each, against the stated margin."""
    depth = control_depth(state.plan_dict, pin.plan)
    base = plan_of(pin.plan)
    layers = fixed_depth(base) if base is not None else None
    ended = pin.status == "completed" and state.status == "completed"
    if depth is None or layers is None or not ended or pin.final is None or not state.val.ys:
        return None
    return depth_gate(DepthArm(layers, (pin.final,)), [DepthArm(depth, (state.val.ys[-1],))]).text


def _fmt(axis: Axis, x: float) -> str:
    if axis == "step":
        return f"step {x:.0f}"
    if axis == "tokens":
        return f"{x / 1e6:.2f} M tokens"
    if axis == "time":
        return f"{x:.1f} training s" if x < 100 else f"{x:.0f} training s"
    return f"{x:.3g} FLOPs"


def remembered_pin(run_dir: Path, settings: Path | None = None) -> Path | None:
    """The baseline pinned to `run_dir` in an earlier session, if any."""
    pins = load_settings(settings).get(SETTINGS_KEY)
    if not isinstance(pins, dict):
        return None
    value = pins.get(str(Path(run_dir).resolve()))
    return Path(value) if isinstance(value, str) and value else None


def remember_pin(run_dir: Path, baseline: Path | None, settings: Path | None = None) -> bool:
    """Remember (or, with None, forget) the baseline pinned to `run_dir`; False when the
    settings file cannot be written (the pin then lasts this session only)."""
    pins = load_settings(settings).get(SETTINGS_KEY)
    pins = dict(pins) if isinstance(pins, dict) else {}
    key = str(Path(run_dir).resolve())
    if baseline is None:
        pins.pop(key, None)
    else:
        pins[key] = str(Path(baseline).resolve())
    return save_settings({SETTINGS_KEY: pins}, settings)


__all__ = [
    "SERIES",
    "PinnedBaseline",
    "candidates",
    "events_mtime_ns",
    "load_pinned",
    "remember_pin",
    "remembered_pin",
    "standing",
]
