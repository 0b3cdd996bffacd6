"""Starting a backend process: run directories, detaching, and torchrun for several processes.

Shared by `train` and `resume`, which re-enter `growcockpit` in a child process
with the same device/distributed flags they were given.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from growcockpit.cli.common import EXIT_OK, UserError
from growcockpit.protocol.rundir import RunPaths


def add_distributed_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("distributed (launched through torch.distributed.run)")
    g.add_argument(
        "--nproc-per-node", type=int, default=1, metavar="N", help="processes (GPUs) on this node"
    )
    g.add_argument("--nnodes", type=int, default=1, metavar="M", help="number of nodes")
    g.add_argument("--node-rank", type=int, default=0, help="this node's rank (multi-node)")
    g.add_argument("--rdzv-endpoint", metavar="HOST:PORT", help="rendezvous address (multi-node)")


def is_worker() -> bool:
    """True in a process this command started (torchrun worker or detached backend re-entry)."""
    return os.environ.get("GROWCOCKPIT_WORKER") == "1"


def is_rank_zero() -> bool:
    return os.environ.get("RANK", "0") == "0"


def torchrun_prefix(args: argparse.Namespace) -> list[str] | None:
    """`python -m torch.distributed.run ...` when more than one process is asked for, else None."""
    nproc: int = args.nproc_per_node
    nnodes: int = args.nnodes
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


def run_torchrun(prefix: list[str], argv: list[str]) -> int:
    """Each worker re-enters `growcockpit train` with GROWCOCKPIT_WORKER=1 and torchrun's RANK/WORLD_SIZE."""
    env = dict(os.environ, GROWCOCKPIT_WORKER="1")
    return subprocess.call([*prefix, "-m", "growcockpit", *argv], env=env)


def distributed_args(args: argparse.Namespace) -> list[str]:
    """The distributed flags as given, to forward to a detached child."""
    out = [f"--nproc-per-node={args.nproc_per_node}", f"--nnodes={args.nnodes}"]
    if args.nnodes > 1:
        out += [f"--node-rank={args.node_rank}", f"--rdzv-endpoint={args.rdzv_endpoint}"]
    return out


def device_args(args: argparse.Namespace) -> list[str]:
    """`--device` and `--compile` as given, to forward to a child process."""
    compile_flag = ["--compile"] if getattr(args, "compile", False) else []
    device: str | None = getattr(args, "device", None)
    return (["--device", device] if device else []) + compile_flag


def default_run_dir(plan_name: str, runs_root: Path) -> Path:
    """A new run directory under `runs_root`, never outside it whatever the plan's name."""
    from growcockpit.protocol.rundir import RunDirError, new_run_dir

    try:
        return new_run_dir(runs_root, plan_name)
    except (RunDirError, OSError) as exc:
        raise UserError(f"{runs_root}: cannot create a run directory ({exc})") from None


def detach(argv: list[str], run_dir: Path) -> int:
    """Start the backend in its own session so it outlives this shell and SSH."""
    from growcockpit.protocol.run_safety import check_run_dir

    run_dir.mkdir(parents=True, exist_ok=True)
    check_run_dir(run_dir, writing=True)  # before backend.log is opened in it
    proc = spawn_backend(argv, run_dir)
    print(f"started pid {proc.pid}: {run_dir} (growcockpit attach {run_dir})")
    return EXIT_OK


def spawn_backend(argv: list[str], run_dir: Path) -> subprocess.Popen[bytes]:
    """`growcockpit ARGV` in a new session, output to RUN/backend.log (protocol/launch.py)."""
    from growcockpit.protocol.launch import spawn_backend as spawn

    return spawn(argv, RunPaths(run_dir).log)
