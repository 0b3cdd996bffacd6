"""Folds of the events that become event-log lines: grows, checkpoints, commands,
warnings and errors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from growcockpit.protocol.events import (
    AwaitingAdvance,
    Checkpoint,
    CommandEvent,
    ErrorEvent,
    Grow,
    ModelLoaded,
    WarningEvent,
)

if TYPE_CHECKING:
    from growcockpit.session.fold.state import RunData

TRACEBACK_LINES = 6


def on_grow(state: RunData, ev: Grow) -> None:
    width = ""
    if ev.from_width and ev.to_width and ev.from_width != ev.to_width:
        width = f", width {ev.from_width}→{ev.to_width}"
    loss = ""
    if ev.loss_before is not None and ev.loss_after is not None:
        loss = f", loss {ev.loss_before:.3f}→{ev.loss_after:.3f}"
    state.log_line(
        ev.step,
        "grow",
        f"grow {ev.operator}: {ev.from_layers}→{ev.to_layers} layers{width} "
        f"in {ev.seconds:.2f}s{loss}",
        "good",
        ev.t,
    )
    state.mark(ev.step, "grow", f"{ev.from_layers}→{ev.to_layers}", ev.t)


def on_checkpoint(state: RunData, ev: Checkpoint) -> None:
    state.last_checkpoint = ev.path
    state.log_line(ev.step, "checkpoint", f"checkpoint ({ev.reason}): {ev.path}", "info", ev.t)


def on_command(state: RunData, ev: CommandEvent) -> None:
    if ev.accepted:
        text, sev = f"command {ev.command}: accepted", "good"
    else:
        text, sev = (
            f"command {ev.command}: refused: {ev.reason or 'no reason given'}",
            "warning",
        )
    if ev.accepted and ev.reason:
        text += f" ({ev.reason})"
    factor = ev.args.get("factor")
    if ev.command == "set_lr" and factor is not None:
        text = text.replace("set_lr", f"set_lr ×{factor:g}", 1)
    state.log_line(ev.step, "command", text, sev, ev.t)
    if ev.command == "stop" and ev.accepted:
        state.stop_step = ev.step
    if ev.command == "set_lr" and ev.accepted:
        if isinstance(factor, int | float) and not isinstance(factor, bool):
            state.lr_scale *= float(factor)
            if state.lr is not None:  # the header shows the new LR now, not at the next step
                state.lr *= float(factor)
        label = f"lr ×{factor:g}" if isinstance(factor, int | float) else "lr"
        state.mark(ev.step, "lr", label, ev.t)


def on_model_loaded(state: RunData, ev: ModelLoaded) -> None:
    state.log_line(0, "loaded", ev.summary(), "good", ev.t)


def on_waiting(state: RunData, ev: AwaitingAdvance) -> None:
    state.log_line(ev.step, "waiting", ev.message, "warning", ev.t)


def on_warning(state: RunData, ev: WarningEvent) -> None:
    state.log_line(ev.step, "warning", ev.message, "warning", ev.t)


def on_error(state: RunData, ev: ErrorEvent) -> None:
    text = ev.message
    detail = ""
    if ev.traceback:
        lines = [ln for ln in ev.traceback.rstrip().splitlines() if ln.strip()]
        last = lines[-1:]
        if last and last[0] not in text:
            text += f" ({last[0]})"
        detail = "\n".join(lines[-TRACEBACK_LINES:])
    state.log_line(ev.step, "error", text, "error", ev.t, detail=detail)
