"""`growcockpit ctl` and `growcockpit status`: talk to a live run through `protocol` only.

Neither imports torch or Textual, so both answer in a fraction of a second over SSH.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from growcockpit.cli.common import EXIT_FAILED, EXIT_OK, Subparsers, UserError, checkpoint_step


def add_parsers(sub: Subparsers) -> None:
    c = sub.add_parser("ctl", help="send a command to a live run")
    c.add_argument("run_dir", type=Path)
    c.add_argument("command", choices=tuple(CTL_VALUE_ARGS))
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
    from growcockpit.protocol import CommandError, CommandRequest, ControlError, send_command

    command: str = args.command
    cmd_args = CTL_VALUE_ARGS[command](args.value, command)
    if args.lr_scale is not None:
        cmd_args["lr_scale"] = rollback_lr_scale(args.lr_scale, command)
    try:
        ack = send_command(args.run_dir, CommandRequest(command, cmd_args), timeout=args.timeout)
    except (ControlError, CommandError) as exc:
        raise UserError(str(exc)) from None
    at = "" if ack.step is None else f" at step {ack.step}"  # None: the loop never saw it
    if ack.accepted:
        print(f"{command}: accepted{at}" + (f" ({ack.reason})" if ack.reason else ""))
        return EXIT_OK
    print(f"{command}: refused{at}: {ack.reason}", file=sys.stderr)
    return EXIT_FAILED


def no_value(value: str | None, command: str) -> dict[str, object]:
    if value is not None:
        raise UserError(
            f"ctl {command} takes no value (got {value[:40]}); e.g. `growcockpit ctl RUN {command}`"
        )
    return {}


def set_lr_factor(value: str | None, command: str) -> dict[str, object]:
    from growcockpit.protocol import lr_factor_problem

    problem = lr_factor_problem(value) if value is not None else "set_lr needs a factor"
    if problem:
        raise UserError(
            f"ctl set_lr: {problem}; e.g. `growcockpit ctl RUN set_lr 0.5` halves the LR"
        )
    return {"factor": float(str(value))}


def rollback_step(value: str | None, command: str) -> dict[str, object]:
    return {} if value is None else {"step": checkpoint_step(value, "ctl rollback")}


def edit_stages_file(value: str | None, command: str) -> dict[str, object]:
    return {"stages": stages_from_file(value)}


# What each ctl command makes of its one positional value (the wire's args).
CTL_VALUE_ARGS: dict[str, Callable[[str | None, str], dict[str, object]]] = {
    "pause": no_value,
    "resume": no_value,
    "advance": no_value,
    "checkpoint": no_value,
    "stop": no_value,
    "set_lr": set_lr_factor,
    "edit_stages": edit_stages_file,
    "rollback": rollback_step,
}


def rollback_lr_scale(scale: str, command: str) -> float:
    """`--lr-scale S`, which only rollback takes, checked before any connection."""
    from growcockpit.protocol import lr_factor_problem

    problem = (
        "only rollback takes it"
        if command != "rollback"
        else lr_factor_problem(scale).replace("set_lr factor", "the LR scale")
    )
    if problem:
        raise UserError(
            f"ctl {command} --lr-scale: {problem}; "
            "e.g. `growcockpit ctl RUN rollback --lr-scale 0.1`"
        )
    return float(scale)


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
    from growcockpit.text.safe_text import terminal_safe

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
    named = f" ({status.stage_name})" if status.stage_name else ""  # none yet while starting
    state = status.state
    if state == "starting" and status.phase:
        state += f" ({status.phase})"
    line = (
        f"{status.run_id}: {state}  plan {status.plan_name}  stage {stage}/{status.num_stages}"
        f"{named}  step {status.step}{total}  loss {loss}  pid {status.pid}"
    )
    lines = [line]
    if status.state == "crashed":  # the one question a crashed run raises
        from growcockpit.protocol.crash_reason import crash_reason
        from growcockpit.protocol.rundir import RunPaths

        lines.append(f"  reason: {crash_reason(RunPaths(args.run_dir))}")
    for text in lines + [f"  {node_line}" for node_line in node.lines()]:
        print(terminal_safe(text))  # the run directory may come from someone else
    return EXIT_OK
