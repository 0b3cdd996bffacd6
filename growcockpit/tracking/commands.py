"""What a tracked loop can do with a control command, and why it refuses the rest.

A loop growcockpit only watches can stop at a step boundary (pause, stop), change its
optimizer's learning rates (set_lr, through an optimizer step hook) and save itself
(checkpoint). It has no plan of
stages to advance or edit, and cannot rewind the user's data loader and code to a
checkpoint, so those commands are refused with the reason and what to do instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from growcockpit.protocol.commands import CommandAck, CommandRequest, lr_scale_problem
from growcockpit.protocol.events import CommandEvent, Event, Paused, Resumed
from growcockpit.protocol.pending import PendingCommand
from growcockpit.tracking.lr_hook import NO_OPTIMIZER
from growcockpit.tracking.ranks import QuietFiles, Ranks, share

if TYPE_CHECKING:
    from growcockpit.tracking.lr_hook import LrFactorHook
    from growcockpit.tracking.run_files import TrackedRunFiles

Honoured = Literal["pause", "resume", "set_lr", "checkpoint", "stop"]
HONOURED: tuple[Honoured, ...] = ("pause", "resume", "set_lr", "checkpoint", "stop")

REFUSALS: dict[str, str] = {
    "advance": (
        "a tracked loop has no stages to advance: grow a Trainer run with "
        "growcockpit.GrowthCallback, or train the plan with growcockpit train"
    ),
    "edit_stages": (
        "a tracked loop runs your own code, not a plan: there are no stages to edit "
        "(GrowthCallback's plan is fixed at launch)"
    ),
    "rollback": (
        "a tracked loop cannot rewind your data loader and code to a checkpoint: "
        "stop it and restart your script from its checkpoint"
    ),
}


def refusal(command: str) -> str:
    return REFUSALS.get(command, f"unknown command {command!r}")


class CommandDesk:
    """The tracker's side of the control socket: each command answered at a step boundary.

    It owns the steering state a command changes (`paused`, `should_stop`, `lr_scale`):
    the tracker reads it and pauses through `pause()`, so each piece has one writer. What
    it needs of the tracker (emit an event, save a checkpoint, the LR, the step) comes in
    as functions, so a `Tracker` subclass's own `checkpoint` (the Trainer's) is the one
    called."""

    def __init__(
        self,
        files: TrackedRunFiles | QuietFiles,
        ranks: Ranks | None,
        lr_hook: LrFactorHook,
        *,
        emit: Callable[[Event], Event],
        checkpoint: Callable[[str], tuple[bool, str]],
        current_lr: Callable[[], float],
        step: Callable[[], int],
    ) -> None:
        self.files = files
        self.ranks = ranks
        self.lr_hook = lr_hook
        self._emit = emit
        self._checkpoint = checkpoint
        self._current_lr = current_lr
        self._step = step
        self.lr_scale = 1.0
        self.paused = False
        self.should_stop = False

    def handle(self) -> None:
        """Apply what arrived; while paused, wait here for more (resume or stop). Under DDP
        rank 0 answers and every rank takes its state from one broadcast (ranks.py)."""
        for pending in self.files.control.poll():
            self._answer(pending)
        self._share()
        while self.paused and not self.should_stop:
            for pending in self.files.control.wait(0.5):
                self._answer(pending)
            self._share()

    def pause(self, reason: str) -> None:
        """Hold the loop at this step boundary (a command, or the loss guard)."""
        self.paused = True
        self._emit(Paused(step=self._step(), reason=reason))

    def end(self) -> None:
        """Let the loop end now, with no checkpoint (a script or test that must not wait)."""
        self.should_stop = True
        self.paused = False

    def _share(self) -> None:
        if self.ranks is not None:
            self.paused, self.should_stop, self.lr_scale = share(
                self.ranks, self.paused, self.should_stop, self.lr_scale
            )

    def _answer(self, pending: PendingCommand) -> None:
        request = pending.request
        accepted, reason = self.apply(request)
        step = self._step()
        pending.reply(CommandAck(request.id, accepted, reason, step))
        self._emit(
            CommandEvent(
                id=request.id,
                command=request.command,
                args=request.args,
                accepted=accepted,
                reason=reason,
                step=step,
            )
        )

    def apply(self, request: CommandRequest) -> tuple[bool, str]:
        """(accepted, the reason shown to the user) for one command at this step boundary."""
        if self.should_stop:
            return False, "the run is stopping"
        command = request.command
        if command not in HONOURED:
            return False, refusal(command)
        step = self._step()
        if command == "pause":
            if self.paused:
                return False, "already paused"
            self.pause("command")
            return True, f"paused at step {step}"
        if command == "resume":
            if not self.paused:
                return False, "not paused"
            self.paused = False
            self._emit(Resumed(step=step))
            return True, f"resumed at step {step}"
        if command == "set_lr":
            return self.set_lr(float(request.args["factor"]))
        if command == "checkpoint":
            return self._checkpoint("command")
        accepted, saved = self._checkpoint("stop")
        self.end()
        return True, f"stopping: {saved}" if accepted else f"stopping without a checkpoint: {saved}"

    def set_lr(self, factor: float) -> tuple[bool, str]:
        """Scale the LR from the next optimizer step on, inside the step (lr_hook.py), so a
        loop that sets its own LR each iteration cannot undo it; refused, with the fix,
        when there is no torch optimizer to hook."""
        if not self.lr_hook.hooked:
            return False, f"set_lr: {NO_OPTIMIZER}"
        problem = lr_scale_problem(self.lr_scale, factor)
        if problem:
            return False, problem
        self.lr_scale *= factor
        return True, (
            f"LR scale now {self.lr_scale:g}: applied inside each optimizer step, whatever "
            f"your loop sets (lr {self._current_lr():.3g} at the next step)"
        )
