"""The Textual cockpit from the command line: `growcockpit [PLAN]`, `attach` and `serve`.

Textual is imported only when a cockpit actually opens; none of these load torch
(the cockpit talks to the backend through `protocol`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from growcockpit.cli.common import EXIT_OK, Subparsers, UserError

LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


def add_runs_arg(p: argparse.ArgumentParser, what: str = "where launched runs go") -> None:
    p.add_argument("--runs", type=Path, default=Path("runs"), help=f"{what} (default: ./runs)")


def build_cockpit_parser() -> argparse.ArgumentParser:
    """`growcockpit [PLAN]`: the designer on a plan, or Home without one."""
    p = argparse.ArgumentParser(prog="growcockpit", description="Open the cockpit on a plan file.")
    p.add_argument(
        "plan", nargs="?", type=Path, help="plan file (without one: Home, your plans and runs)"
    )
    add_runs_arg(p)
    p.set_defaults(func=cmd_cockpit)
    return p


def add_parsers(sub: Subparsers) -> None:
    a = sub.add_parser("attach", help="open the cockpit on an existing run")
    a.add_argument("run_dir", type=Path)
    a.add_argument(
        "--wait",
        action="store_true",
        help="wait for a run directory that does not exist yet (default at a terminal)",
    )
    a.set_defaults(func=cmd_attach)

    sv = sub.add_parser(
        "serve",
        help="publish the cockpit in a web browser (textual-serve), on localhost by default",
    )
    sv.add_argument(
        "target", nargs="?", type=Path, help="a plan file or run directory to open (default: home)"
    )
    sv.add_argument("--host", default="localhost", help="interface to bind (default: localhost)")
    sv.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    add_runs_arg(sv, "where runs live")
    sv.add_argument(
        "--no-token",
        action="store_true",
        help="serve without the per-launch token (any local user can then open your cockpit)",
    )
    sv.set_defaults(func=cmd_serve)


def cmd_cockpit(args: argparse.Namespace) -> int:
    """`growcockpit`: home (plans and runs); `growcockpit PLAN`: the designer on that plan."""
    plan_path: Path | None = getattr(args, "plan", None)
    if plan_path is not None and not Path(plan_path).is_file():
        raise UserError(
            f"{plan_path}: no such plan file; `growcockpit` alone lists the sample plans"
        )
    from growcockpit.ui import GrowCockpitApp

    GrowCockpitApp(plan_path=plan_path, runs_root=args.runs).run()
    return EXIT_OK


def check_run_dir(run_dir: Path) -> Path:
    """`run_dir` if it holds a run (an events.jsonl), else a UserError saying what is missing.

    A run directory with a planted link or special file is refused here too
    (the cockpit writes its lock and index into it, and a FIFO would hang it).
    """
    from growcockpit.protocol import RunPaths
    from growcockpit.protocol.run_safety import check_run_dir as check_safe
    from growcockpit.protocol.safe_fs import RunDirError

    paths = RunPaths(run_dir)
    if not paths.root.is_dir():
        raise UserError(f"{paths.root}: no such run directory; list runs with `ls runs/`")
    try:
        check_safe(paths.root, writing=False)
    except RunDirError as exc:
        raise UserError(str(exc)) from None
    if not paths.events.exists():
        raise UserError(
            f"{paths.events}: missing; not a growcockpit run directory (see backend.log if it exists)"
        )
    return paths.root


def cmd_attach(args: argparse.Namespace) -> int:
    from growcockpit.cli.attach_wait import wait_for_start

    # right after `train --detach`: no event log yet; before a script's track(): no directory
    wait_for_start(args.run_dir, missing=args.wait or sys.stderr.isatty())
    root = check_run_dir(args.run_dir)
    from growcockpit.ui import GrowCockpitApp

    GrowCockpitApp(run_dir=root, runs_root=root.parent).run()
    return EXIT_OK


def serve_command(target: Path | None, runs: Path) -> list[str]:
    """The cockpit command textual-serve starts for each browser session."""
    cmd = [sys.executable, "-m", "growcockpit"]
    if target is not None and target.is_dir():
        return [*cmd, "attach", str(check_run_dir(target).resolve())]
    if target is not None:
        if not target.is_file():
            raise UserError(f"{target}: no such plan file or run directory")
        return [*cmd, "--runs", str(runs.resolve()), str(target.resolve())]
    return [*cmd, "--runs", str(runs.resolve())]


def cmd_serve(args: argparse.Namespace) -> int:
    import shlex

    from growcockpit.ui.web_serve import ServeError, new_token, serve

    command = shlex.join(serve_command(args.target, args.runs))
    if args.host not in LOCAL_HOSTS:
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
    try:
        serve(command, args.host, args.port, None if args.no_token else new_token())
    except ServeError as exc:
        raise UserError(str(exc)) from None
    return EXIT_OK
