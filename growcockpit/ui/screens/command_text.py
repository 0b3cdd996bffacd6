"""What the dashboard says about its commands: the LR factor check and each command's outcome.

Pure functions (no screen), so the words a user reads after pressing a key are
decided in one place: a toast for the cockpit and a line for the run's event
log (with its own severity word, `good` for an accepted command).
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.notifications import SeverityLevel

from growcockpit.protocol.commands import CommandAck, lr_factor_problem


def factor_problem(value: str) -> str:
    """The LR prompt's check: a number, then the protocol's own check of set_lr."""
    try:
        factor = float(value)
    except ValueError:
        return "a number, e.g. 0.5"
    return lr_factor_problem(factor)


@dataclass(frozen=True)
class CommandOutcome:
    """A command's toast (text, title, severity, timeout) and its event-log severity."""

    text: str
    title: str
    severity: SeverityLevel
    timeout: float | None
    log_severity: str


def command_outcome(command: str, ack: CommandAck | None, error: str) -> CommandOutcome:
    """Not delivered (`ack` None, `error` says why), accepted at a step, or refused and why."""
    if ack is None:
        text = f"{command} not delivered: {error}"
        return CommandOutcome(text, "Command failed", "error", 8, "error")
    if ack.accepted:
        text = f"{command} accepted at step {ack.step}"
        if ack.reason:
            text += f" ({ack.reason})"
        return CommandOutcome(text, "Command acknowledged", "information", None, "good")
    text = f"{command} refused: {ack.reason or 'no reason given'}"
    return CommandOutcome(text, "Command refused", "warning", 8, "warning")
