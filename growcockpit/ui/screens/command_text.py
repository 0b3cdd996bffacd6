"""What the dashboard says about its commands: the prompts' checks and texts, and each outcome.

Pure functions (no screen), so the words a user reads after pressing a key are
decided in one place: a toast for the cockpit and a line for the run's event
log (with its own severity word, `good` for an accepted command).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from textual.notifications import SeverityLevel

from growcockpit.protocol.commands import LR_FACTOR_RANGE, CommandAck, lr_factor_problem


def factor_problem(value: str) -> str:
    """The LR prompt's check: a number, then the protocol's own check of set_lr."""
    try:
        factor = float(value)
    except ValueError:
        return "a number, e.g. 0.5"
    return lr_factor_problem(factor)


def lr_body(lr: float | None, scale: float) -> str:
    """What the LR prompt tells: the LR now and the scale the set_lr factors made so far."""
    now = f"now {lr:.3g}" if lr else "the current value"
    return (
        f"Multiply the learning rate ({now}, ×{scale:g} so far) by a factor:\n"
        "0.5 halves it, 2 doubles it. The schedule continues from the new value."
    )


def rollback_step_problem(value: str) -> str:
    """The rollback prompt's check: empty (the latest checkpoint) or a checkpoint's step."""
    if value.strip() == "" or (value.strip().isdigit() and len(value.strip()) < 19):
        return ""
    return "a checkpoint's step, e.g. 200, or empty for the latest"


def rollback_args(value: str) -> dict[str, int]:
    """The rollback command's args from the prompt's (checked) value."""
    return {"step": int(value)} if value.strip() else {}


def rollback_body(step: int, last_checkpoint: str | None, edit_steps: list[int] = []) -> str:  # noqa: B006
    """What the rollback prompt tells before anything is restored, including that the
    checkpoint's plan comes back: stage edits made after it are undone (a user once got
    636 steps back for the 586 they had set, without a word)."""
    latest = (
        f"the latest is {PurePath(last_checkpoint).name}"
        if last_checkpoint
        else "none seen yet in this log"
    )
    body = (
        f"Restore a checkpoint (step {step} now; {latest}): weights, optimizer, stage,\n"
        "LR scale, data position and plan go back to it, and later checkpoints move to\n"
        "checkpoints/rolled-back/. Type a checkpoint's step, or leave empty for the latest."
    )
    saved = checkpoint_step(last_checkpoint)
    undone = [s for s in edit_steps if saved is None or s >= saved]
    if undone:
        at = ", ".join(str(s) for s in undone)
        body += (
            f"\nYour stage edits at step {at} are undone when the checkpoint predates them:"
            "\nedit the remaining stages again (e) after the rollback."
        )
    return body


def checkpoint_step(path: str | None) -> int | None:
    """The step of a checkpoint directory `…/step-200` (None when it is not one)."""
    name = PurePath(path).name if path else ""
    digits = name.removeprefix("step-")
    return int(digits) if name.startswith("step-") and digits.isdigit() else None


def rollback_scale_problem(value: str) -> str:
    """The blow-up rollback prompt's check: the LR scale to train on, as the backend checks it."""
    low, high = LR_FACTOR_RANGE
    try:
        scale = float(value)
    except ValueError:
        return f"an LR scale such as 0.1 (from {low:g} to {high:g})"
    if lr_factor_problem(scale):
        return f"an LR scale from {low:g} to {high:g}, e.g. 0.1"
    return ""


def suggested_scale(scale: float) -> str:
    """A tenth of the scale that blew up (what the backend's pause message suggests too)."""
    low, high = LR_FACTOR_RANGE
    return f"{min(high, max(low, scale / 10)):g}"


def blow_up_body(reason: str, step: int, scale: float, last_checkpoint: str | None) -> str:
    """What the blow-up rollback prompt tells: why, where it goes back to, what to type."""
    target = PurePath(last_checkpoint).name if last_checkpoint else "the latest checkpoint"
    return (
        f"Paused at step {step} ({reason}): the update was skipped, but the steps before it\n"
        f"may have damaged the weights, so resuming as is tends to blow up again.\n"
        f"Roll back to {target} (the last good one) and train on at this LR scale\n"
        f"(×{scale:g} now). The run resumes once the rollback is done."
    )


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
        text = f"{command} accepted" + ("" if ack.step is None else f" at step {ack.step}")
        if ack.reason:
            text += f" ({ack.reason})"
        return CommandOutcome(text, "Command acknowledged", "information", None, "good")
    text = f"{command} refused: {ack.reason or 'no reason given'}"
    return CommandOutcome(text, "Command refused", "warning", 8, "warning")
