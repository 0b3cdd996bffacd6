"""The `growcockpit` command.

Subcommands import lazily: `growcockpit` (the cockpit), `attach`, `ctl`,
`status` and `plan` never import torch, so they start in a fraction of a
second over SSH; only `train` and `resume` load the training stack. Each
group of subcommands lives in its own module and adds its own parsers.

Every user error ends in one line on stderr that names the place and the fix,
and a non-zero exit code: 2 for bad input, 1 for a failed run.
"""

from __future__ import annotations

import argparse
import sys

from growcockpit.cli import cockpit, live, notes, plans, race, reports, training
from growcockpit.cli.cockpit import add_runs_arg, build_cockpit_parser, cmd_cockpit
from growcockpit.cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UserError, run_command

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "UserError",
    "build_cockpit_parser",
    "build_parser",
    "main",
    "subcommands",
]

# In `growcockpit --help` order.
GROUPS = (training, cockpit, live, notes, reports, plans, race)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="growcockpit",
        description="Design, run and steer growing-transformer training schedules. "
        "A bare `growcockpit` opens the cockpit's Home (your plans, the samples, every run); "
        "`growcockpit PLAN` opens that plan in the designer.",
    )
    add_runs_arg(p)
    p.set_defaults(func=cmd_cockpit, plan=None)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for group in GROUPS:
        group.add_parsers(sub)
    return p


def subcommands(parser: argparse.ArgumentParser) -> tuple[str, ...]:
    """The subcommand names `parser` knows (argparse keeps them on its one subparsers action)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return tuple(action.choices)
    return ()


def main(argv: list[str] | None = None) -> int:
    """`growcockpit ARGS`; a first word that is no subcommand is a plan file for the cockpit."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv and not argv[0].startswith("-") and argv[0] not in subcommands(parser):
        args = build_cockpit_parser().parse_args(argv)
    else:
        args = parser.parse_args(argv)
    return run_command(args.func, args)
