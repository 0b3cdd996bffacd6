"""What the compare screen draws, without Textual: runs' validation-loss curves and verdicts.

The curves and the verdict come from `growcockpit.compare` (the same code as the
headless `growcockpit compare`); this module only picks the default target run
and shapes the series for the two plots.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from growcockpit.compare import RunProgress, Verdict, load_progress, verdicts

Axis = Literal["wall", "flops"]


@dataclass
class Comparison:
    """Selected runs, the target run among them and each run's verdict."""

    runs: list[RunProgress]
    target: int | None
    verdicts: list[Verdict]

    @property
    def target_loss(self) -> float | None:
        return self.runs[self.target].final_val_loss if self.target is not None else None


def load_runs(paths: list[Path]) -> list[RunProgress]:
    """Each run's progress; a run whose log cannot be read shows as empty, named with why."""
    out = []
    for p in paths:
        try:
            out.append(load_progress(p))
        except OSError as exc:
            out.append(RunProgress(f"{Path(p).name} (unreadable: {exc.strerror or exc})"))
    return out


def named_baseline(run: RunProgress) -> bool:
    return "baseline" in run.name.lower() or "baseline" in run.plan_name.lower()


def is_baseline(run: RunProgress) -> bool:
    """Named a baseline, or a plan of one stage (the full model from the start: no growth)."""
    return named_baseline(run) or run.plan_stages == 1


def default_target(runs: list[RunProgress]) -> int | None:
    """The longest-trained baseline that has evaluated (a run named so first, then a
    one-stage plan), else the first run that has evaluated. A shortened baseline beside
    the full one is not the target, nor is the newest run just because it is first."""
    evaluated = [i for i, r in enumerate(runs) if r.evals]
    for pick in (
        [i for i in evaluated if named_baseline(runs[i])],
        [i for i in evaluated if is_baseline(runs[i])],
    ):
        if pick:
            return max(pick, key=lambda i: (runs[i].step, -i))
    return evaluated[0] if evaluated else None


def compare(runs: list[RunProgress], target: int | None) -> Comparison:
    """The verdicts of `runs` against run `target` (None: `default_target`)."""
    if target is None or not 0 <= target < len(runs) or not runs[target].evals:
        target = default_target(runs)
    results = verdicts(runs, runs[target]) if target is not None else []
    return Comparison(runs, target, results)


def short_verdict(v: Verdict) -> str:
    """The verdict for a table whose target is named beside it: "reaches the target 2.0×
    sooner (wall)…", so the whole line fits (the CLI keeps the target's name in it)."""
    return v.text.replace(f"{v.target_run}'s final loss", "the target", 1)


def next_target(comparison: Comparison) -> int | None:
    """The next run (after the current target) that has evaluated: the `t` key."""
    n = len(comparison.runs)
    start = -1 if comparison.target is None else comparison.target
    for k in range(1, n + 1):
        i = (start + k) % n
        if comparison.runs[i].evals:
            return i
    return None


FLOP_UNITS = (("PFLOPs", 1e15), ("TFLOPs", 1e12), ("GFLOPs", 1e9), ("MFLOPs", 1e6))


def flop_unit(runs: list[RunProgress]) -> tuple[str, float]:
    """The largest unit that the biggest run's FLOPs reach at least once."""
    top = max((r.flops or 0.0 for r in runs), default=0.0)
    return next(((n, s) for n, s in FLOP_UNITS if top >= s), FLOP_UNITS[-1])


def series(
    run: RunProgress, axis: Axis, scale: float = 1e15
) -> tuple[list[float], list[float], list[float]]:
    """(x, val loss, stage starts) of a run: x in training seconds or in FLOPs / `scale`."""
    if axis == "wall":
        return (
            [p.wall_s for p in run.evals],
            [p.val_loss for p in run.evals],
            [m.wall_s for m in run.stages],
        )
    pts = [p for p in run.evals if p.flops is not None]
    return (
        [(p.flops or 0.0) / scale for p in pts],
        [p.val_loss for p in pts],
        [(m.flops or 0.0) / scale for m in run.stages if m.flops is not None],
    )
