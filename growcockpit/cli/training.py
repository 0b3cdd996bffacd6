"""`growcockpit train` and `growcockpit resume`: the only subcommands that load torch.

Every check that can fail on bad input (plan, corpus, run directory, checkpoint)
runs before the run directory is created or touched, so a refused launch leaves
nothing behind.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from pathlib import Path

from growcockpit.cli.common import (
    Subparsers,
    UserError,
    add_set_arg,
    checkpoint_step,
    load_plan_or_fail,
    load_plan_set_or_fail,
)
from growcockpit.cli.launch import (
    add_distributed_args,
    default_run_dir,
    detach,
    device_args,
    distributed_args,
    is_rank_zero,
    is_worker,
    run_torchrun,
    torchrun_prefix,
)
from growcockpit.plan.types import Plan
from growcockpit.protocol.rundir import RunPaths


def add_parsers(sub: Subparsers) -> None:
    t = sub.add_parser("train", help="train a plan headless (no UI)")
    t.add_argument("plan", type=Path)
    t.add_argument("--run-dir", type=Path, help="run directory (default: runs/<plan>-<time>)")
    t.add_argument("--device", help="torch device, e.g. cpu or cuda:0 (default: cuda if available)")
    t.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile each block's forward (as [optim] compile = true)",
    )
    t.add_argument(
        "--detach", action="store_true", help="start in the background (own session) and return"
    )
    add_set_arg(t)
    add_distributed_args(t)
    t.set_defaults(func=cmd_train)

    r = sub.add_parser("resume", help="continue a run from its last checkpoint")
    r.add_argument("run_dir", type=Path)
    r.add_argument(
        "--from",
        dest="from_step",
        metavar="step-N",
        help="restore this checkpoint instead of the latest (later ones move to checkpoints/rolled-back/)",
    )
    r.add_argument(
        "--force",
        action="store_true",
        help="resume even a completed run (retrains, rewrites final/)",
    )
    r.add_argument("--device")
    r.add_argument("--detach", action="store_true")
    add_distributed_args(r)
    r.set_defaults(func=cmd_resume)


def _check_safe(run_dir: Path) -> None:
    """A run directory with a planted link or special file: one line, exit 2, nothing touched."""
    from growcockpit.protocol.run_safety import check_run_dir
    from growcockpit.protocol.safe_fs import RunDirError

    try:
        check_run_dir(run_dir, writing=True)
    except RunDirError as exc:
        raise UserError(str(exc)) from None


def cmd_train(args: argparse.Namespace) -> int:
    plan_path: Path = args.plan
    plan, plan_text = load_plan_set_or_fail(plan_path, args.sets)
    worker = is_worker()
    given: Path | None = args.run_dir
    if given is not None:
        _check_safe(given)
    if given is not None and os.path.lexists(RunPaths(given).events) and not worker:
        raise UserError(
            f"{given}: already holds a run; use `growcockpit resume {given}` or choose another --run-dir"
        )
    prefix = torchrun_prefix(args)
    from growcockpit.backend.data.corpus import DataError, resolve_corpus
    from growcockpit.plan.task_source import is_task_source

    try:
        if not is_task_source(plan.data.source):  # a generated task reads no files
            resolve_corpus(plan.data.source)
    except DataError as exc:
        raise UserError(f"{plan_path}: {exc}") from None
    if plan.model.init_from is not None:  # a source whose tensors lie: before any directory
        from growcockpit.backend.state.source_weights import (
            SourceWeightsError,
            check_source_weights,
        )

        try:
            check_source_weights(plan)
        except SourceWeightsError as exc:
            raise UserError(f"{plan_path}: {exc}") from None
    run_dir = given or default_run_dir(plan.name, Path("runs"))  # created only now
    forwarded = ["train", str(plan_path), "--run-dir", str(run_dir)] + device_args(args)
    forwarded += [f"--set={item}" for item in args.sets]
    if args.detach:
        return detach(forwarded + distributed_args(args), run_dir)
    from growcockpit.backend import startup

    if prefix is None:
        startup.guard_startup(run_dir, plan.name, len(plan.stages), plan.total_steps)
    try:
        from growcockpit.backend.run import LaunchError, check_supported, run_training

        try:
            check_supported(plan, str(plan_path))
        except LaunchError as exc:
            raise UserError(str(exc)) from None
        if prefix is not None:
            return run_torchrun(prefix, forwarded)
        if is_rank_zero():
            print(f"run directory: {run_dir}", flush=True)
        if args.compile:
            plan.optim.compile = True
        from growcockpit.session.index_keeper import index_kept  # the cockpit's cache, kept fresh

        with index_kept(run_dir, enabled=is_rank_zero()):
            return run_training(plan, plan_text, run_dir, device=args.device)
    except startup.StartupInterrupted as exc:
        return startup.end_interrupted(run_dir, exc)


def cmd_resume(args: argparse.Namespace) -> int:
    from growcockpit.protocol import RunDirError, read_status

    run_dir: Path = args.run_dir
    _check_safe(run_dir)  # before anything in it is read (a FIFO would block) or written
    try:
        status = read_status(run_dir)
    except RunDirError as exc:
        raise UserError(str(exc)) from None
    worker = is_worker()
    if status.is_live() and not worker:
        raise UserError(
            f"{run_dir}: the run is still live (pid {status.pid}); attach to it instead"
        )
    if not os.path.lexists(RunPaths(run_dir).plan) and _tracked(run_dir):
        raise UserError(
            f"{run_dir}: no plan.toml: a tracked run (growcockpit.track or a Trainer/Lightning "
            "callback) is your own loop; restart your script from its checkpoint instead"
        )
    if status.state == "completed" and not args.force and not worker:
        raise UserError(
            f"{run_dir}: the run completed (step {status.step}/{status.total_steps}); nothing to "
            "resume. `--force` retrains from its last checkpoint and rewrites final/"
        )
    step = checkpoint_step(args.from_step, "resume --from") if args.from_step else None
    ckpt, notes = _checkpoint_to_resume(run_dir, step)  # torch-free: refused before any start
    if args.detach or torchrun_prefix(args) is not None:
        again = ["resume", str(run_dir)] + device_args(args)
        again += [f"--from=step-{step}"] if step is not None else []
        again += ["--force"] if args.force else []
        if args.detach:
            return detach(again + distributed_args(args), run_dir)
        return run_torchrun(torchrun_prefix(args) or [], again)
    plan = load_plan_or_fail(RunPaths(run_dir).plan, resuming=True)
    from growcockpit.backend import startup

    before = _status_bytes(run_dir)  # put back if the checkpoint or the plan is refused
    # `status` says "starting" with this pid while torch loads and the checkpoint is checked
    # (seconds), not the old run's "stopped … pid <old pid>"
    startup.guard_startup(run_dir, plan.name, len(plan.stages), plan.total_steps)
    try:
        _checked_resume(run_dir, ckpt, plan, args.device)
    except UserError:
        _put_back(run_dir, before)
        raise
    except startup.StartupInterrupted as exc:
        _put_back(run_dir, before)
        name = signal.Signals(exc.signum).name
        print(
            f"growcockpit: stopped by {name} before the resume began; the run is as it was",
            file=sys.stderr,
        )
        return 0
    from growcockpit.backend.state.restore import set_aside_later

    try:
        if is_rank_zero():
            for note in notes:
                print(f"growcockpit: {run_dir}/checkpoints/{note}", file=sys.stderr, flush=True)
            if step is not None:
                set_aside_later(RunPaths(run_dir).checkpoints, step)
            print(f"resuming {run_dir} from {ckpt.name}", flush=True)
        from growcockpit.backend.run import run_training
        from growcockpit.session.index_keeper import index_kept

        with index_kept(run_dir, enabled=is_rank_zero()):
            return run_training(
                plan, "", run_dir, device=args.device, resume_from=ckpt, status_before=before
            )
    except startup.StartupInterrupted as exc:
        return startup.end_interrupted(run_dir, exc)


def _checkpoint_to_resume(run_dir: Path, step: int | None) -> tuple[Path, list[str]]:
    """The checkpoint a resume continues from, and notes on the ones passed over (no torch)."""
    from growcockpit.backend.state.restore import RestoreError, pick_checkpoint

    try:
        return pick_checkpoint(RunPaths(run_dir).checkpoints, step)
    except RestoreError as exc:
        raise UserError(str(exc)) from None


def _checked_resume(run_dir: Path, ckpt: Path, plan: Plan, device: str | None) -> None:
    """The checkpoint, every part checked, and the run's plan checked against it and the
    machine: a hostile pickle, contents that lie, a planted giant or an edited plan.toml is
    a UserError before anything is built."""
    from growcockpit.backend.state.checkpoint import CheckpointError, load_checkpoint
    from growcockpit.backend.state.checkpoint_checks import check_state
    from growcockpit.backend.state.resume_checks import check_resume_memory, check_resume_shape

    try:
        checked = check_state(load_checkpoint(ckpt, mmap=True, plan=plan), ckpt)
        check_resume_shape(plan, checked, ckpt, RunPaths(run_dir).plan)  # plan.toml edited?
        check_resume_memory(plan, device, RunPaths(run_dir).plan)
    except CheckpointError as exc:
        raise UserError(str(exc)) from None


def _put_back(run_dir: Path, before: bytes | None) -> None:
    """status.json as it was before this resume (a refused resume changes nothing)."""
    if before is None or not is_rank_zero():
        return
    from growcockpit.protocol import safe_fs

    with contextlib.suppress(OSError):
        safe_fs.write_atomic(RunPaths(run_dir).status, before)


def _status_bytes(run_dir: Path) -> bytes | None:
    """status.json's bytes (None when unreadable): a refused resume leaves it as it was."""
    from growcockpit.protocol import safe_fs

    try:
        return safe_fs.read_bytes(RunPaths(run_dir).status, 1 << 20)
    except OSError:
        return None


def _tracked(run_dir: Path) -> bool:
    """A run a user's own loop wrote (`growcockpit.track`): its first event names a trainer.
    Only the first line is read, through the run directory's rules (no link, no FIFO)."""
    from growcockpit.protocol import safe_fs

    try:
        fd = safe_fs.open_read(RunPaths(run_dir).events)
    except OSError:
        return False
    try:
        first = os.read(fd, 1 << 16).split(b"\n", 1)[0]
    finally:
        os.close(fd)
    try:
        started = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(started, dict) and bool(started.get("trainer"))
