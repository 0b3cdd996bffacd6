"""What every subcommand shares: exit codes, the one-line user error, plan loading.

Kept free of torch and Textual so that importing it costs nothing: the cheap
subcommands (`status`, `ctl`, `plan`) must start in a fraction of a second.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from growcockpit.text.safe_text import quoted

if TYPE_CHECKING:
    from growcockpit.plan import Plan

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141  # 128 + SIGPIPE: the reader left (`growcockpit status RUN | head -1`)

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Command: TypeAlias = Callable[[argparse.Namespace], int]


class UserError(Exception):
    """Bad input: printed as one line, exit code 2."""


def run_command(func: Command, args: argparse.Namespace) -> int:
    """Run a subcommand; a UserError becomes one line on stderr and exit 2, never a traceback."""
    try:
        code = int(func(args))
        sys.stdout.flush()  # here, where a reader that left is caught, not at exit
        return code
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_PIPE
    except UserError as exc:
        print(f"growcockpit: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a hostile run directory refused deep inside: still one line
        from growcockpit.protocol.safe_fs import RunDirError

        if not isinstance(exc, RunDirError):
            raise
        print(
            f"growcockpit: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's flush at exit cannot fail again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def load_plan_or_fail(path: Path, *, resuming: bool = False) -> Plan:
    """The plan at `path`, or a UserError naming the bad field (the loader's message).

    `resuming`: the plan of a run with a checkpoint, whose `model.init_from` source
    need not exist any more (the checkpoint holds the weights). What the plan names is
    checked on this machine too (`check_environment`): the run is about to read it."""
    from growcockpit.plan import PlanError, load_plan, validate_plan
    from growcockpit.plan.environment import check_environment
    from growcockpit.plan.init_from import without_init_from

    try:
        if not resuming:
            return load_plan(path, environment=check_environment)
        plan = load_plan(path, validate=False)
        resumed = without_init_from(plan)
        text = path.read_text("utf-8")
        validate_plan(resumed, str(path), text, environment=check_environment(resumed))
        return plan
    except PlanError as exc:
        raise UserError(str(exc)) from None


def add_set_arg(parser: argparse.ArgumentParser) -> None:
    """`--set section.field=value`, repeatable (growcockpit.plan.overrides)."""
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a plan key, e.g. optim.lr=2e-3 or stages.0.steps=100 (repeatable)",
    )


def load_plan_set_or_fail(path: Path, sets: list[str]) -> tuple[Plan, str]:
    """The plan at `path` with `--set` overrides applied, and its text to freeze in a run;
    checked against this machine too (`check_environment`)."""
    from growcockpit.plan import PlanError
    from growcockpit.plan.environment import check_environment
    from growcockpit.plan.overrides import load_plan_with

    try:
        return load_plan_with(path, sets, check_environment)
    except PlanError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None


def checkpoint_step(value: str, where: str) -> int:
    """`200` or `step-200` → 200."""
    text = value.removeprefix("step-")
    if not text.isdigit() or len(text) > 18:
        raise UserError(
            f"{where}: {quoted(value)} is not a checkpoint step; give one such as 200 or step-200 "
            "(ls RUN/checkpoints)"
        )
    return int(text)
