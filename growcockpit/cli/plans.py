"""`growcockpit plan validate` and `growcockpit plan show`: plan files, no training.

Only `plan show --calibrate` loads torch (it builds the plan's model to measure it).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from growcockpit.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    Subparsers,
    UserError,
    add_set_arg,
    load_plan_set_or_fail,
)
from growcockpit.plan.memory import DEFAULT_GPU_GB, DEFAULT_RANKS

if TYPE_CHECKING:
    from growcockpit.plan import Plan


def add_parsers(sub: Subparsers) -> None:
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
    sh.add_argument(
        "--ranks",
        type=_positive_int,
        default=DEFAULT_RANKS,
        metavar="N",
        help=f"ranks the memory and traffic estimate assumes (default {DEFAULT_RANKS})",
    )
    sh.add_argument(
        "--gpu-gb",
        type=_positive_float,
        default=DEFAULT_GPU_GB,
        metavar="G",
        help=f"one GPU's memory in GB the largest stage must fit (default {DEFAULT_GPU_GB:g})",
    )
    add_set_arg(sh)
    sh.set_defaults(func=cmd_plan_show)


def _positive_int(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number ≥ 1")
    return int(text)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of GB")
    return value


def cmd_plan_validate(args: argparse.Namespace) -> int:
    """Every file is checked and every problem of each is printed, one line each (the
    designer lists the same ones); the exit is 2 if any file has a problem. A warning (a
    FIFO skipped beside the data files) is printed after the file's "ok" and fails nothing."""
    from growcockpit.plan.environment import check_environment, environment_warnings
    from growcockpit.plan.load import plan_file_problems
    from growcockpit.plan.show import budget_lines
    from growcockpit.text.wording import counted

    failed = 0
    for path in args.plans:
        plan, problems = plan_file_problems(path, check_environment)
        for problem in problems:
            print(str(problem), file=sys.stderr)
        if plan is None:
            failed += 1
            continue
        stages, steps = counted(len(plan.stages), "stage"), counted(plan.total_steps, "step")
        print(f"{path}: ok ({stages}, {steps})")
        for key, warning in environment_warnings(plan):
            print(f"{path}: {key}: warning: {warning}", file=sys.stderr)
        for line in budget_lines(plan):
            print(f"  {line}")
    return EXIT_USAGE if failed else EXIT_OK


def cmd_plan_show(args: argparse.Namespace) -> int:
    from growcockpit.plan import estimate_cost, format_plan
    from growcockpit.plan.memory_show import memory_lines

    plan, _ = load_plan_set_or_fail(args.plan, args.sets)
    r: float = args.r
    h: float | None = None
    frozen_fwd = 1.0
    if args.calibrate:
        from growcockpit.backend.calibrate import calibrate_plan, implausible, loaded_warning
        from growcockpit.backend.data.corpus import DataError

        try:
            measured = calibrate_plan(plan)
        except DataError as exc:
            raise UserError(str(exc)) from None
        r, h, frozen_fwd = measured["r"], measured["h"], measured["frozen_over_grad_fwd"]
        print(
            f"calibrated on this machine: r = {r:.2f} (backward/forward of a block), "
            f"h = {h:.2f} blocks (head forward), frozen-block forward {frozen_fwd:.2f}× a training forward"
        )
        if problems := implausible(measured):
            print(loaded_warning(problems, _load_average(), os.cpu_count()))
        print(
            f"for [budget] minutes = M on this machine: unit_ms = {unit_ms(plan, measured):.4g} "
            "(calibrated full-depth step time ÷ its cost units)"
        )
    print(format_plan(plan, estimate_cost(plan, r=r, h=h, frozen_fwd=frozen_fwd)))
    print()
    print("\n".join(memory_lines(plan, args.ranks, args.gpu_gb)))
    return EXIT_OK


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # not on every platform
        return None


def unit_ms(plan: Plan, measured: dict[str, float]) -> float:
    """Wall ms of one cost unit: the calibrated full-depth step, (1 + r)(L + h) block
    forwards, divided by that step's units under the plan's (uncalibrated) cost model."""
    from growcockpit.plan import estimate_cost

    L = plan.model.final_layers
    step_ms = (1 + measured["r"]) * (L + measured["h"]) * measured["block_fwd_ms"]
    units = estimate_cost(plan).baseline_step_cost
    return step_ms / units if units > 0 else 0.0
