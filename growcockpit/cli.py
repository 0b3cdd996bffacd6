"""The `growcockpit` command.

Subcommands import lazily: `growcockpit` (the cockpit), `attach`, `ctl`,
`status` and `plan` never import torch, so they start in a fraction of a
second over SSH; only `train` and `resume` load the training stack.

Every user error ends in one line on stderr that names the place and the fix,
and a non-zero exit code: 2 for bad input, 1 for a failed run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UserError(Exception):
    """Bad input: printed as one line, exit code 2."""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv and not argv[0].startswith("-") and argv[0] not in SUBCOMMANDS:
        args = build_cockpit_parser().parse_args(argv)
    else:
        args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except UserError as exc:
        print(f"growcockpit: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


SUBCOMMANDS = ("train", "resume", "attach", "ctl", "status", "compare", "plan", "serve", "export")


def build_cockpit_parser() -> argparse.ArgumentParser:
    """`growcockpit [PLAN]`: open the cockpit on a plan (the CPU demo by default)."""
    p = argparse.ArgumentParser(prog="growcockpit", description="Open the cockpit on a plan file.")
    p.add_argument("plan", nargs="?", type=Path, help="plan file (default: the CPU demo)")
    p.add_argument(
        "--runs", type=Path, default=Path("runs"), help="where launched runs go (default: ./runs)"
    )
    p.set_defaults(func=cmd_cockpit)
    return p


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="growcockpit",
        description="Design, run and steer growing-transformer training schedules. "
        "`growcockpit [PLAN]` opens the cockpit (default plan: the CPU demo).",
    )
    p.add_argument(
        "--runs", type=Path, default=Path("runs"), help="where launched runs go (default: ./runs)"
    )
    p.set_defaults(func=cmd_cockpit, plan=None)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    t = sub.add_parser("train", help="train a plan headless (no UI)")
    t.add_argument("plan", type=Path)
    t.add_argument("--run-dir", type=Path, help="run directory (default: runs/<plan>-<time>)")
    t.add_argument("--device", help="torch device, e.g. cpu or cuda:0 (default: cuda if available)")
    t.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile each stage's step (as [optim] compile = true)",
    )
    t.add_argument(
        "--detach", action="store_true", help="start in the background (own session) and return"
    )
    _add_distributed_args(t)
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
    _add_distributed_args(r)
    r.set_defaults(func=cmd_resume)

    a = sub.add_parser("attach", help="open the cockpit on an existing run")
    a.add_argument("run_dir", type=Path)
    a.set_defaults(func=cmd_attach)

    c = sub.add_parser("ctl", help="send a command to a live run")
    c.add_argument("run_dir", type=Path)
    c.add_argument(
        "command",
        choices=[
            "pause",
            "resume",
            "advance",
            "checkpoint",
            "stop",
            "set_lr",
            "edit_stages",
            "rollback",
        ],
    )
    c.add_argument(
        "value",
        nargs="?",
        help="set_lr: factor (e.g. 0.5); edit_stages: a TOML file with [[stages]]; "
        "rollback: a checkpoint step (default: the latest)",
    )
    c.add_argument("--timeout", type=float, default=120.0)
    c.set_defaults(func=cmd_ctl)

    s = sub.add_parser("status", help="print the state of a run")
    s.add_argument("run_dir", type=Path)
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_status)

    ex = sub.add_parser("export", help="convert a run's events.jsonl for TensorBoard")
    ex.add_argument("run_dir", type=Path)
    ex.add_argument("--tensorboard", type=Path, required=True, metavar="DIR", help="output dir")
    ex.set_defaults(func=cmd_export)

    cp = sub.add_parser(
        "compare", help="how much sooner each run reaches a target run's final validation loss"
    )
    cp.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    cp.add_argument(
        "--target", type=Path, help="the run whose final loss is the target (default: the first)"
    )
    cp.add_argument("--json", action="store_true", help="machine-readable output")
    cp.set_defaults(func=cmd_compare)

    pl = sub.add_parser("plan", help="check or describe plan files")
    psub = pl.add_subparsers(dest="plan_command", metavar="ACTION", required=True)
    v = psub.add_parser("validate", help="validate plan files")
    v.add_argument("plans", nargs="+", type=Path)
    v.set_defaults(func=cmd_plan_validate)
    sh = psub.add_parser("show", help="print a plan's stages and estimated cost")
    sh.add_argument("plan", type=Path)
    sh.add_argument(
        "--r", type=float, default=2.0, help="backward/forward cost ratio for the estimate"
    )
    sh.add_argument(
        "--calibrate",
        action="store_true",
        help="measure r and h for this plan's model on this machine (builds it; takes seconds)",
    )
    sh.set_defaults(func=cmd_plan_show)

    sv = sub.add_parser(
        "serve",
        help="publish the cockpit in a web browser (textual-serve), on localhost by default",
    )
    sv.add_argument(
        "target", nargs="?", type=Path, help="a plan file or run directory to open (default: home)"
    )
    sv.add_argument("--host", default="localhost", help="interface to bind (default: localhost)")
    sv.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    sv.add_argument(
        "--runs", type=Path, default=Path("runs"), help="where runs live (default: ./runs)"
    )
    sv.add_argument(
        "--no-token",
        action="store_true",
        help="serve without the per-launch token (any local user can then open your cockpit)",
    )
    sv.set_defaults(func=cmd_serve)
    return p


def _add_distributed_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("distributed (launched through torch.distributed.run)")
    g.add_argument(
        "--nproc-per-node", type=int, default=1, metavar="N", help="processes (GPUs) on this node"
    )
    g.add_argument("--nnodes", type=int, default=1, metavar="M", help="number of nodes")
    g.add_argument("--node-rank", type=int, default=0, help="this node's rank (multi-node)")
    g.add_argument("--rdzv-endpoint", metavar="HOST:PORT", help="rendezvous address (multi-node)")


def _torchrun_prefix(args: argparse.Namespace) -> list[str] | None:
    """`python -m torch.distributed.run ...` when more than one process is asked for, else None."""
    nproc, nnodes = args.nproc_per_node, args.nnodes
    if nproc < 1 or nnodes < 1:
        raise UserError("--nproc-per-node and --nnodes must be at least 1")
    if nproc == 1 and nnodes == 1:
        return None
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc-per-node={nproc}",
        f"--nnodes={nnodes}",
    ]
    if nnodes == 1:
        cmd.append("--standalone")
    else:
        if not args.rdzv_endpoint:
            raise UserError("--nnodes > 1 needs --rdzv-endpoint HOST:PORT (the same on every node)")
        cmd += [
            f"--node-rank={args.node_rank}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={args.rdzv_endpoint}",
        ]
    return cmd


def _run_torchrun(prefix: list[str], argv: list[str]) -> int:
    """Each worker re-enters `growcockpit train` with GROWCOCKPIT_WORKER=1 and torchrun's RANK/WORLD_SIZE."""
    env = dict(os.environ, GROWCOCKPIT_WORKER="1")
    return subprocess.call([*prefix, "-m", "growcockpit", *argv], env=env)


# ---- plans -----------------------------------------------------------------------
def _load(path: Path):  # type: ignore[no-untyped-def]
    from growcockpit.plan import PlanError, load_plan

    try:
        return load_plan(path)
    except PlanError as exc:
        raise UserError(str(exc)) from None


def cmd_plan_validate(args: argparse.Namespace) -> int:
    from growcockpit.plan import PlanError, load_plan
    from growcockpit.plan.show import budget_lines

    failed = 0
    for path in args.plans:
        try:
            plan = load_plan(path)
        except PlanError as exc:
            print(str(exc), file=sys.stderr)
            failed += 1
            continue
        print(f"{path}: ok ({len(plan.stages)} stages, {plan.total_steps} steps)")
        for line in budget_lines(plan):
            print(f"  {line}")
    return EXIT_USAGE if failed else EXIT_OK


def cmd_plan_show(args: argparse.Namespace) -> int:
    from growcockpit.plan import estimate_cost, format_plan

    plan = _load(args.plan)
    r, h, frozen_fwd = args.r, None, 1.0
    if args.calibrate:
        from growcockpit.backend.calibrate import calibrate_plan
        from growcockpit.backend.corpus import DataError

        try:
            measured = calibrate_plan(plan)
        except DataError as exc:
            raise UserError(str(exc)) from None
        r, h, frozen_fwd = measured["r"], measured["h"], measured["frozen_over_grad_fwd"]
        print(
            f"calibrated on this machine: r = {r:.2f} (backward/forward of a block), "
            f"h = {h:.2f} blocks (head forward), frozen-block forward {measured['frozen_over_grad_fwd']:.2f}× a training forward"
        )
        print(
            f"for [budget] minutes = M on this machine: unit_ms = {_unit_ms(plan, measured):.4g} "
            "(calibrated full-depth step time ÷ its cost units)"
        )
    print(format_plan(plan, estimate_cost(plan, r=r, h=h, frozen_fwd=frozen_fwd)))
    return EXIT_OK


def _unit_ms(plan, measured: dict[str, float]) -> float:  # type: ignore[no-untyped-def]
    """Wall ms of one cost unit: the calibrated full-depth step, (1 + r)(L + h) block
    forwards, divided by that step's units under the plan's (uncalibrated) cost model."""
    from growcockpit.plan import estimate_cost

    L = plan.model.final_layers
    step_ms = (1 + measured["r"]) * (L + measured["h"]) * measured["block_fwd_ms"]
    units = estimate_cost(plan).baseline_step_cost
    return step_ms / units if units > 0 else 0.0


# ---- training --------------------------------------------------------------------
def default_run_dir(plan_name: str, runs_root: Path) -> Path:
    """A new run directory under `runs_root`, never outside it whatever the plan's name."""
    from growcockpit.protocol.rundir import RunDirError, new_run_dir

    try:
        return new_run_dir(runs_root, plan_name)
    except (RunDirError, OSError) as exc:
        raise UserError(f"{runs_root}: cannot create a run directory ({exc})") from None


def cmd_train(args: argparse.Namespace) -> int:
    plan = _load(args.plan)
    worker = os.environ.get("GROWCOCKPIT_WORKER") == "1"
    given: Path | None = args.run_dir
    if given is not None and (given / "events.jsonl").exists() and not worker:
        raise UserError(
            f"{given}: already holds a run; use `growcockpit resume {given}` or choose another --run-dir"
        )
    prefix = _torchrun_prefix(args)
    from growcockpit.backend.corpus import DataError, resolve_corpus

    try:
        resolve_corpus(plan.data.source)
    except DataError as exc:
        raise UserError(f"{args.plan}: {exc}") from None
    run_dir = given or default_run_dir(plan.name, Path("runs"))  # created only now
    forwarded = ["train", str(args.plan), "--run-dir", str(run_dir)] + _device_args(args)
    if args.detach:
        return _detach(forwarded + _distributed_args(args), run_dir)
    from growcockpit.backend import startup

    if prefix is None:
        startup.guard_startup(run_dir, plan.name, len(plan.stages), plan.total_steps)
    try:
        from growcockpit.backend.run import LaunchError, check_supported, run_training

        try:
            check_supported(plan, str(args.plan))
        except LaunchError as exc:
            raise UserError(str(exc)) from None
        if prefix is not None:
            return _run_torchrun(prefix, forwarded)
        if os.environ.get("RANK", "0") == "0":
            print(f"run directory: {run_dir}", flush=True)
        if args.compile:
            plan.optim.compile = True
        return run_training(plan, args.plan.read_text(), run_dir, device=args.device)
    except startup.StartupInterrupted as exc:
        return startup.end_interrupted(run_dir, exc)


def cmd_resume(args: argparse.Namespace) -> int:
    from growcockpit.protocol import RunDirError, read_status

    run_dir: Path = args.run_dir
    try:
        status = read_status(run_dir)
    except RunDirError as exc:
        raise UserError(str(exc)) from None
    worker = os.environ.get("GROWCOCKPIT_WORKER") == "1"
    if status.is_live() and not worker:
        raise UserError(
            f"{run_dir}: the run is still live (pid {status.pid}); attach to it instead"
        )
    if status.state == "completed" and not args.force and not worker:
        raise UserError(
            f"{run_dir}: the run completed (step {status.step}/{status.total_steps}); nothing to "
            "resume. `--force` retrains from its last checkpoint and rewrites final/"
        )
    step = _checkpoint_step(args.from_step, "resume --from") if args.from_step else None
    from growcockpit.backend.restore import RestoreError, pick_checkpoint, set_aside_later

    try:
        ckpt, notes = pick_checkpoint(run_dir / "checkpoints", step)
    except RestoreError as exc:
        raise UserError(str(exc)) from None
    again = ["resume", str(run_dir)] + _device_args(args)
    again += [f"--from=step-{step}"] if step is not None else []
    again += ["--force"] if args.force else []
    if args.detach:
        return _detach(again + _distributed_args(args), run_dir)
    prefix = _torchrun_prefix(args)
    if prefix is not None:
        return _run_torchrun(prefix, again)
    from growcockpit.backend.checkpoint import CheckpointError, load_checkpoint

    try:
        load_checkpoint(ckpt, mmap=True)  # refuses a hostile pickle before anything is touched
    except CheckpointError as exc:
        raise UserError(str(exc)) from None
    plan = _load(run_dir / "plan.toml")
    from growcockpit.backend import startup

    startup.guard_startup(run_dir, plan.name, len(plan.stages), plan.total_steps)
    try:
        if os.environ.get("RANK", "0") == "0":
            for note in notes:
                print(f"growcockpit: {run_dir}/checkpoints/{note}", file=sys.stderr, flush=True)
            if step is not None:
                set_aside_later(run_dir / "checkpoints", step)
            print(f"resuming {run_dir} from {ckpt.name}", flush=True)
        from growcockpit.backend.run import run_training

        return run_training(plan, "", run_dir, device=args.device, resume_from=ckpt)
    except startup.StartupInterrupted as exc:
        return startup.end_interrupted(run_dir, exc)


def _distributed_args(args: argparse.Namespace) -> list[str]:
    out = [f"--nproc-per-node={args.nproc_per_node}", f"--nnodes={args.nnodes}"]
    if args.nnodes > 1:
        out += [f"--node-rank={args.node_rank}", f"--rdzv-endpoint={args.rdzv_endpoint}"]
    return out


def _device_args(args: argparse.Namespace) -> list[str]:
    compile_flag = ["--compile"] if getattr(args, "compile", False) else []
    return (["--device", args.device] if getattr(args, "device", None) else []) + compile_flag


def _detach(argv: list[str], run_dir: Path) -> int:
    """Start the backend in its own session so it outlives this shell and SSH."""
    run_dir.mkdir(parents=True, exist_ok=True)
    proc = spawn_backend(argv, run_dir)
    print(f"started pid {proc.pid}: {run_dir} (growcockpit attach {run_dir})")
    return EXIT_OK


def spawn_backend(argv: list[str], run_dir: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.setdefault(
        "GLIBC_TUNABLES",
        "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296",
    )
    env.setdefault("PYTHONUNBUFFERED", "1")
    with open(run_dir / "backend.log", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "growcockpit", *argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )


# ---- live runs -------------------------------------------------------------------
def cmd_ctl(args: argparse.Namespace) -> int:
    from growcockpit.protocol import (
        CommandError,
        CommandRequest,
        ControlError,
        lr_factor_problem,
        send_command,
    )

    cmd_args: dict[str, object] = {}
    if args.command == "set_lr":
        problem = lr_factor_problem(args.value) if args.value is not None else "a factor"
        if problem:
            raise UserError(
                f"ctl set_lr: {problem}; e.g. `growcockpit ctl RUN set_lr 0.5` halves the LR"
            )
        cmd_args["factor"] = float(args.value)
    elif args.command == "rollback" and args.value is not None:
        cmd_args["step"] = _checkpoint_step(args.value, "ctl rollback")
    elif args.command == "edit_stages":
        cmd_args["stages"] = _stages_from_file(args.value)
    elif args.value is not None:
        raise UserError(f"ctl {args.command} takes no value (got {args.value!r})")
    try:
        ack = send_command(
            args.run_dir, CommandRequest(args.command, cmd_args), timeout=args.timeout
        )
    except (ControlError, CommandError) as exc:
        raise UserError(str(exc)) from None
    if ack.accepted:
        print(
            f"{args.command}: accepted at step {ack.step}"
            + (f" ({ack.reason})" if ack.reason else "")
        )
        return EXIT_OK
    print(f"{args.command}: refused at step {ack.step}: {ack.reason}", file=sys.stderr)
    return EXIT_FAILED


def _checkpoint_step(value: str, where: str) -> int:
    """`200` or `step-200` → 200."""
    text = value.removeprefix("step-")
    if not text.isdigit() or len(text) > 18:
        raise UserError(
            f"{where}: {value[:40]!r} is not a checkpoint step; give one such as 200 or step-200 "
            "(ls RUN/checkpoints)"
        )
    return int(text)


def _stages_from_file(value: str | None) -> list[dict[str, object]]:
    import tomllib

    if not value:
        raise UserError("ctl edit_stages needs a TOML file holding [[stages]] tables")
    path = Path(value)
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{path}: not UTF-8 text (byte {exc.start}); give a TOML file holding [[stages]] tables"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: invalid TOML ({exc})") from None
    except RecursionError:
        raise UserError(f"{path}: invalid TOML (nested too deeply)") from None
    stages = data.get("stages")
    if not isinstance(stages, list) or not stages:
        raise UserError(f"{path}: no [[stages]] tables; write the remaining stages as [[stages]]")
    return stages


def cmd_status(args: argparse.Namespace) -> int:
    from growcockpit.protocol import RunDirError, read_status
    from growcockpit.protocol.node import latest_node
    from growcockpit.protocol.safe_text import terminal_safe

    try:
        status = read_status(args.run_dir)
    except RunDirError as exc:
        raise UserError(str(exc)) from None
    node = latest_node(args.run_dir)  # every GPU and each rank's step time, from the events
    if args.json:
        print(node.json_with(status))
        return EXIT_OK
    loss = f"{status.loss:.4f}" if status.loss is not None else "-"
    # A finished run's stage index is one past the last stage; show the last one.
    stage = min(status.stage + 1, status.num_stages) if status.num_stages else status.stage + 1
    line = (
        f"{status.run_id}: {status.state}  plan {status.plan_name}  stage {stage}/{status.num_stages} "
        f"({status.stage_name})  step {status.step}/{status.total_steps}  loss {loss}  pid {status.pid}"
    )
    for text in [line] + [f"  {node_line}" for node_line in node.lines()]:
        print(terminal_safe(text))  # the run directory may come from someone else
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from growcockpit.export import MirrorError, export_tensorboard

    try:
        print(export_tensorboard(args.run_dir, args.tensorboard))
    except MirrorError as exc:
        raise UserError(str(exc)) from None
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from growcockpit.compare.command import CompareError, compare

    try:
        print(compare(list(args.run_dirs), args.target, args.json))
    except CompareError as exc:
        raise UserError(str(exc)) from None
    return EXIT_OK


# ---- the cockpit -----------------------------------------------------------------
def cmd_cockpit(args: argparse.Namespace) -> int:
    """`growcockpit`: home (plans and runs); `growcockpit PLAN`: the designer on that plan."""
    plan_path = getattr(args, "plan", None)
    if plan_path is not None and not Path(plan_path).is_file():
        raise UserError(
            f"{plan_path}: no such plan file; `growcockpit` alone lists the sample plans"
        )
    from growcockpit.ui import GrowCockpitApp

    GrowCockpitApp(plan_path=plan_path, runs_root=args.runs).run()
    return EXIT_OK


def _check_run_dir(run_dir: Path) -> Path:
    from growcockpit.protocol import RunPaths

    paths = RunPaths(run_dir)
    if not paths.root.is_dir():
        raise UserError(f"{paths.root}: no such run directory; list runs with `ls runs/`")
    if not paths.events.exists():
        raise UserError(
            f"{paths.events}: missing; not a growcockpit run directory (see backend.log if it exists)"
        )
    return paths.root


def cmd_attach(args: argparse.Namespace) -> int:
    root = _check_run_dir(args.run_dir)
    from growcockpit.ui import GrowCockpitApp

    GrowCockpitApp(run_dir=root, runs_root=root.parent).run()
    return EXIT_OK


def serve_command(target: Path | None, runs: Path) -> list[str]:
    """The cockpit command textual-serve starts for each browser session."""
    cmd = [sys.executable, "-m", "growcockpit"]
    if target is not None and target.is_dir():
        return [*cmd, "attach", str(_check_run_dir(target).resolve())]
    if target is not None:
        if not target.is_file():
            raise UserError(f"{target}: no such plan file or run directory")
        return [*cmd, "--runs", str(runs.resolve()), str(target.resolve())]
    return [*cmd, "--runs", str(runs.resolve())]


def cmd_serve(args: argparse.Namespace) -> int:
    import shlex

    from growcockpit.ui.web_serve import new_token, serve

    command = shlex.join(serve_command(args.target, args.runs))
    if args.host not in ("localhost", "127.0.0.1", "::1"):
        print(
            f"growcockpit: serving on {args.host}: anyone who can reach port {args.port} "
            "and has the URL can steer your runs (the traffic is not encrypted)",
            file=sys.stderr,
        )
    if args.no_token:
        print(
            "growcockpit: --no-token: any user of this machine can open the cockpit and steer your runs",
            file=sys.stderr,
        )
    serve(command, args.host, args.port, None if args.no_token else new_token())
    return EXIT_OK
