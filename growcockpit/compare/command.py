"""`growcockpit compare RUN_A RUN_B [...] [--target RUN] [--json]`."""

from __future__ import annotations

import json
from pathlib import Path

from growcockpit.compare.envelope import metric_of
from growcockpit.compare.gated import gated_verdicts
from growcockpit.compare.progress import RunProgress, load_progress
from growcockpit.compare.report import format_text, to_json
from growcockpit.protocol.rundir import RunPaths


class CompareError(Exception):
    """A run directory that cannot be compared (the message names it and the fix)."""


def _names(dirs: list[Path]) -> list[str]:
    """Each run's directory name, with its parent's when two names collide."""
    plain = [d.name for d in dirs]
    return [f"{d.parent.name}/{d.name}" if plain.count(d.name) > 1 else d.name for d in dirs]


def load_runs(dirs: list[Path]) -> list[RunProgress]:
    runs = []
    for d, name in zip(dirs, _names(dirs), strict=True):
        events = RunPaths(d).events
        if not d.is_dir():
            raise CompareError(f"{d}: no such run directory; list runs with `ls runs/`")
        if not events.is_file():
            raise CompareError(f"{events}: missing; not a growcockpit run directory")
        try:
            run = load_progress(d)
        except OSError as exc:
            raise CompareError(f"{events}: cannot be read ({exc.strerror or exc})") from None
        run.name = name
        runs.append(run)
    return runs


def compare(
    dirs: list[Path],
    target: Path | None = None,
    as_json: bool = False,
    metric: str = "val_loss",
    value: float | None = None,
) -> str:
    """The comparison of `dirs` against `target`'s (default: the first run's) final val loss;
    growth claims on `metric` (to `value`, default the target run's final value)."""
    if len(dirs) < 2:
        raise CompareError("compare needs two or more run directories")
    try:
        chosen = metric_of(metric)
    except ValueError as exc:
        raise CompareError(f"--metric: {exc}") from None
    if chosen == "accuracy" and value is not None and not 0 < value <= 1:
        raise CompareError(
            f"--target-value {value:g}: an accuracy target is in (0, 1]; 0.95 for 95 %"
        )
    all_dirs = list(dirs)
    if target is not None and target.resolve() not in [d.resolve() for d in dirs]:
        all_dirs.append(target)
    runs = load_runs(all_dirs)
    index = 0 if target is None else [d.resolve() for d in all_dirs].index(target.resolve())
    goal = runs[index]
    if goal.final_val_loss is None:
        raise CompareError(
            f"{all_dirs[index]}: has no validation loss yet (no eval event); "
            "pick a target run that has evaluated (--target) or wait for its first evaluation"
        )
    shown = runs[: len(dirs)]
    gated = gated_verdicts(shown, goal, chosen, value)
    if as_json:
        return json.dumps(to_json(shown, gated, goal), indent=2)
    return format_text(shown, gated, goal)
