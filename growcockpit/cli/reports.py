"""`growcockpit compare` and `growcockpit export`: read finished or live runs' events, write reports.

Both go through `compare` / `export`, which know `plan` and `protocol` only: no torch.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from growcockpit.cli.common import EXIT_OK, Subparsers, UserError


def add_parsers(sub: Subparsers) -> None:
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
    cp.add_argument(
        "--metric",
        choices=("val_loss", "accuracy"),
        default="val_loss",
        help="what growth claims are measured on: val_loss (lower is better) or accuracy "
        "(exact match, higher is better, where the task reports it)",
    )
    cp.add_argument(
        "--target-value",
        type=float,
        metavar="V",
        help="the value of --metric to reach (default: the target run's final value; "
        "0.95 for 95 %% accuracy)",
    )
    cp.add_argument("--json", action="store_true", help="machine-readable output")
    cp.set_defaults(func=cmd_compare)


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
        print(compare(list(args.run_dirs), args.target, args.json, args.metric, args.target_value))
    except CompareError as exc:
        raise UserError(str(exc)) from None
    return EXIT_OK
