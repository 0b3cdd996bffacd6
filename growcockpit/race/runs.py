"""Train one candidate's run directory up to a compute, as a `growcockpit` subprocess.

A rung is a prefix of the candidate's full plan, not a shorter plan: the run trains
its own plan (same LR schedule over its full total steps) and is sent `stop` once an
evaluation at or past the rung's compute is in its event log. `stop` checkpoints,
so the next rung (or the winner's full-budget continuation) is `growcockpit resume`
of the same run: no compute is thrown away. A rung bills each run its compute up to
that evaluation (`billed_flops`); the few steps before the stop lands are billed to the
next rung if the candidate goes on. A backend lives no longer than its race worker
(supervise.py).

The race never imports torch: the run is `python -m growcockpit train|resume`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from growcockpit.compare.progress import RunProgress, load_progress
from growcockpit.protocol import CommandRequest, ControlError, RunDirError, read_status, safe_fs
from growcockpit.protocol.control_client import send_command
from growcockpit.protocol.launch import spawn_backend
from growcockpit.protocol.rundir import RunPaths
from growcockpit.race.halving import Point, reached
from growcockpit.race.race_dir import (
    LOGS,
    RaceDirError,
    check_run_entry,
    has_checkpoint,
    race_root,
    remake_run_dir,
    subdir,
    unsafe,
)
from growcockpit.race.supervise import (
    STOP_WAIT_S,
    die_with_parent,
    forget,
    is_growcockpit,
    record,
    run_env,
    stop_orphan,
)

POLL_S = 0.2


@dataclass(frozen=True)
class RunState:
    """A run's evaluations against compute, its compute so far and whether it completed."""

    points: list[Point]
    flops: float
    completed: bool
    status: str


def run_state(run_dir: Path) -> RunState:
    """What the run's event log says (an empty state before it has one, or when the run
    directory or its log is a link or special file: nothing is read through those)."""
    try:
        if not check_run_entry(run_dir) or not safe_fs.check_file(RunPaths(run_dir).events):
            return RunState([], 0.0, False, "missing")
        prog: RunProgress = load_progress(run_dir)
    except (OSError, RunDirError, RaceDirError):
        return RunState([], 0.0, False, "missing")
    points = [Point(e.flops, e.val_loss) for e in prog.evals if e.flops is not None]
    return RunState(points, prog.flops or 0.0, prog.status == "completed", prog.status)


def _done(state: RunState, target: float | None) -> bool:
    return state.completed or (target is not None and reached(state.points, target))


def _command(run_dir: Path, plan_file: Path) -> list[str]:
    """`train` for a new run, `resume` for one with a checkpoint; a run killed before its
    first checkpoint has nothing to resume and starts again in a fresh directory (the old
    one deleted only if the race made it: race_dir.remake_run_dir)."""
    try:
        events = check_run_entry(run_dir) and safe_fs.check_file(RunPaths(run_dir).events)
        if events and has_checkpoint(run_dir):
            return ["resume", str(run_dir)]
        if not safe_fs.check_file(plan_file):
            raise RaceDirError(f"{plan_file}: missing; the race's plan files are gone, so "
                               "start the race again in a new --race-dir")  # fmt: skip
    except safe_fs.UnsafePath as exc:
        raise unsafe(exc) from None
    remake_run_dir(run_dir)
    return ["train", str(plan_file), "--run-dir", str(run_dir)]


def _wait_live(run_dir: Path) -> None:
    """A run still live: its backend left by a killed race is stopped (supervise.py);
    another growcockpit process training it (a `resume` by hand) is sent `stop` and
    waited for, at most STOP_WAIT_S. A status.json whose pid is no growcockpit process
    lies and is not waited on."""
    stop_orphan(run_dir, lambda line: print(line, flush=True))
    try:
        status = read_status(run_dir)
    except (RunDirError, OSError):
        return
    if not status.is_live() or not is_growcockpit(status.pid):
        return
    with contextlib.suppress(ControlError):
        send_command(run_dir, CommandRequest("stop"), timeout=30)
    deadline = time.monotonic() + STOP_WAIT_S
    while status.is_live():
        if time.monotonic() > deadline:
            raise RaceDirError(
                f"{run_dir}: still live {STOP_WAIT_S:g} s after `stop` (pid {status.pid}); "
                f"stop it (growcockpit ctl {run_dir} stop) and run the race again"
            )
        time.sleep(POLL_S)
        try:
            status = read_status(run_dir)
        except (RunDirError, OSError):
            return


def billed_flops(state: RunState, target: float) -> float:
    """The compute a rung bills a run: up to its first evaluation at or past `target` (what
    measuring it there took), so what ran on after it (a stop's last steps, or a backend
    left training by a killed race) is not billed to the race; all of it for a run that
    ended before reaching `target`."""
    past = [p.flops for p in state.points if p.flops >= target]
    return min(min(past), state.flops) if past else state.flops


def _log_path(run_dir: Path) -> Path:
    """The run's subprocess output, in `<race>/logs/` (not beside the run directories, so
    `growcockpit compare <race>/runs/*` sees runs only)."""
    return subdir(race_root(run_dir), LOGS) / f"{run_dir.name}.log"


def advance_run(
    run_dir: Path,
    plan_file: Path,
    target: float | None,
    stopping: Callable[[], bool] | None = None,
) -> RunState:
    """Train `run_dir` (from `plan_file` the first time) until it has been evaluated at or
    past `target` FLOPs, or to its plan's end when `target` is None; its state then.
    Once `stopping()` says so (the race was asked to stop), the run is sent `stop` too."""
    check_run_entry(run_dir)  # a link planted as the run (or runs/) is refused, not steered
    state = run_state(run_dir)
    if _done(state, target):
        return state
    _wait_live(run_dir)
    state = run_state(run_dir)
    if _done(state, target):
        return state
    argv = _command(run_dir, plan_file)
    try:  # dies with this worker (supervise.py), found again by its record if not
        proc = spawn_backend(argv, _log_path(run_dir), new_session=False,
                             extra_env=run_env(run_dir), preexec_fn=die_with_parent())  # fmt: skip
    except safe_fs.UnsafePath as exc:  # a link or FIFO planted as the run's log
        raise unsafe(exc) from None
    record(run_dir, proc.pid)
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
        forget(run_dir)
    return run_state(run_dir)
