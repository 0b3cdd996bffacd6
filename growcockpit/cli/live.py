"""`growcockpit ctl` and `growcockpit status`: talk to a live run through `protocol` only.

Neither imports torch or Textual, so both answer in a fraction of a second over SSH.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from growcockpit.cli.common import EXIT_FAILED, EXIT_OK, Subparsers, UserError, checkpoint_step

CTL_COMMANDS = (
    "pause",
    "resume",
    "advance",
    "checkpoint",
    "stop",
    "set_lr",
    "edit_stages",
    "rollback",
)


def add_parsers(sub: Subparsers) -> None:
    c = sub.add_parser("ctl", help="send a command to a live run")
    c.add_argument("run_dir", type=Path)
    c.add_argument("command", choices=CTL_COMMANDS)
    c.add_argument(
        "value",
        nargs="?",
        help="set_lr: factor (e.g. 0.5); edit_stages: a TOML file with [[stages]]; "
        "rollback: a checkpoint step (default: the latest)",
    )
    c.add_argument(
        "--lr-scale",
        help="rollback: train on at this LR scale (e.g. 0.1) instead of the checkpoint's",
    )
    c.add_argument("--timeout", type=float, default=120.0)
    c.set_defaults(func=cmd_ctl)

    s = sub.add_parser("status", help="print the state of a run")
    s.add_argument("run_dir", type=Path)
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_status)


def cmd_ctl(args: argparse.Namespace) -> int:
    from growcockpit.protocol import (
        CommandError,
        CommandRequest,
        ControlError,
        lr_factor_problem,
        send_command,
    )

    command: str = args.command
    value: str | None = args.value
    cmd_args: dict[str, object] = {}
    if command == "set_lr":
        problem = lr_factor_problem(value) if value is not None else "a factor"
        if problem or value is None:
            raise UserError(
                f"ctl set_lr: {problem}; e.g. `growcockpit ctl RUN set_lr 0.5` halves the LR"
            )
        cmd_args["factor"] = float(value)
    elif command == "rollback" and value is not None:
        cmd_args["step"] = checkpoint_step(value, "ctl rollback")
    scale: str | None = args.lr_scale
    if scale is not None:
        problem = lr_factor_problem(scale)
        if command != "rollback" or problem:
            raise UserError(
                f"ctl {command} --lr-scale: "
                + (
                    "only rollback takes it"
                    if command != "rollback"
                    else problem.replace("set_lr factor", "the LR scale")
                )
                + "; e.g. `growcockpit ctl RUN rollback --lr-scale 0.1`"
            )
        cmd_args["lr_scale"] = float(scale)
    if command == "edit_stages":
        cmd_args["stages"] = stages_from_file(value)
    elif value is not None and command not in ("set_lr", "rollback"):
        raise UserError(f"ctl {command} takes no value (got {value!r})")
    try:
        ack = send_command(args.run_dir, CommandRequest(command, cmd_args), timeout=args.timeout)
    except (ControlError, CommandError) as exc:
        raise UserError(str(exc)) from None
    if ack.accepted:
        print(
            f"{command}: accepted at step {ack.step}" + (f" ({ack.reason})" if ack.reason else "")
        )
        return EXIT_OK
    print(f"{command}: refused at step {ack.step}: {ack.reason}", file=sys.stderr)
    return EXIT_FAILED


def stages_from_file(value: str | None) -> list[dict[str, object]]:
    """The [[stages]] tables of the TOML file `value`, for `ctl edit_stages`."""
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
    total = f"/{status.total_steps}" if status.total_steps else ""  # a tracked loop may not say
    line = (
        f"{status.run_id}: {status.state}  plan {status.plan_name}  stage {stage}/{status.num_stages} "
        f"({status.stage_name})  step {status.step}{total}  loss {loss}  pid {status.pid}"
    )
    for text in [line] + [f"  {node_line}" for node_line in node.lines()]:
        print(terminal_safe(text))  # the run directory may come from someone else
    return EXIT_OK
