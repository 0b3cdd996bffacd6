"""Train one candidate's run directory up to a compute, as a `growcockpit` subprocess.

A rung is a prefix of the candidate's full plan, not a shorter plan: the run trains
its own plan (same LR schedule over its full total steps) and is sent `stop` once an
evaluation at or past the rung's compute is in its event log. `stop` checkpoints,
so the next rung (or the winner's full-budget continuation) is `growcockpit resume`
of the same run: no compute is thrown away. The steps between that evaluation and
the stop are counted in the compute the race reports, as everything is.

The race never imports torch: the run is `python -m growcockpit train|resume`.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from growcockpit.compare.progress import RunProgress, load_progress
from growcockpit.protocol import CommandRequest, ControlError, RunDirError, read_status
from growcockpit.protocol.control_client import send_command
from growcockpit.protocol.launch import spawn_backend
from growcockpit.protocol.rundir import RunPaths
from growcockpit.race.halving import Point, reached

POLL_S = 0.2


@dataclass(frozen=True)
class RunState:
    """A run's evaluations against compute, its compute so far and whether it completed."""

    points: list[Point]
    flops: float
    completed: bool
    status: str


def run_state(run_dir: Path) -> RunState:
    """What the run's event log says (an empty state before it has one)."""
    if not (RunPaths(run_dir).events).exists():
        return RunState([], 0.0, False, "missing")
    try:
        prog: RunProgress = load_progress(run_dir)
    except OSError:
        return RunState([], 0.0, False, "missing")
    points = [Point(e.flops, e.val_loss) for e in prog.evals if e.flops is not None]
    return RunState(points, prog.flops or 0.0, prog.status == "completed", prog.status)


def _done(state: RunState, target: float | None) -> bool:
    return state.completed or (target is not None and reached(state.points, target))


def _checkpoints(run_dir: Path) -> bool:
    ckpts = RunPaths(run_dir).checkpoints
    return ckpts.is_dir() and any(p.name.startswith("step-") for p in ckpts.iterdir())


def _command(run_dir: Path, plan_file: Path) -> list[str]:
    """`train` for a new run, `resume` for one with a checkpoint; a run killed before its
    first checkpoint has nothing to resume and starts again (its directory is the race's)."""
    if (RunPaths(run_dir).events).exists() and _checkpoints(run_dir):
        return ["resume", str(run_dir)]
    if run_dir.exists():
        shutil.rmtree(run_dir)
    return ["train", str(plan_file), "--run-dir", str(run_dir)]


def _wait_live(run_dir: Path) -> None:
    """A run still live from a race that was killed: stop it and wait until it is gone."""
    try:
        status = read_status(run_dir)
    except (RunDirError, OSError):
        return
    if not status.is_live():
        return
    with contextlib.suppress(ControlError):
        send_command(run_dir, CommandRequest("stop"), timeout=30)
    while status.is_live():
        time.sleep(POLL_S)
        try:
            status = read_status(run_dir)
        except (RunDirError, OSError):
            return


def _log_path(run_dir: Path) -> Path:
    """The run's subprocess output, in `<race>/logs/` (not beside the run directories, so
    `growcockpit compare <race>/runs/*` sees runs only)."""
    logs = run_dir.parent.parent / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    return logs / f"{run_dir.name}.log"


def advance_run(
    run_dir: Path,
    plan_file: Path,
    target: float | None,
    stopping: Callable[[], bool] | None = None,
) -> RunState:
    """Train `run_dir` (from `plan_file` the first time) until it has been evaluated at or
    past `target` FLOPs, or to its plan's end when `target` is None; its state then.
    Once `stopping()` says so (the race was asked to stop), the run is sent `stop` too."""
    state = run_state(run_dir)
    if _done(state, target):
        return state
    _wait_live(run_dir)
    state = run_state(run_dir)
    if _done(state, target):
        return state
    proc = spawn_backend(_command(run_dir, plan_file), _log_path(run_dir), new_session=False)
    try:
        stop_sent = False
        wait = POLL_S
        while proc.poll() is None:
            time.sleep(wait)
            if stop_sent:
                continue
            if stopping is not None and stopping():
                try:
                    send_command(run_dir, CommandRequest("stop"), timeout=60)
                    stop_sent = True
                except ControlError:  # a run still starting does not listen yet: next poll
                    pass
                continue
            if target is None:
                continue
            began = time.monotonic()
            now = run_state(run_dir)
            # a long event log takes a while to fold: poll no more than 1/5 of the time
            wait = max(POLL_S, 4 * (time.monotonic() - began))
            if reached(now.points, target):
                with contextlib.suppress(ControlError):
                    send_command(run_dir, CommandRequest("stop"), timeout=60)
                stop_sent = True
    finally:
        if proc.poll() is None:  # the race itself is ending: the run stops with a checkpoint
            proc.terminate()
            proc.wait()
    return run_state(run_dir)
