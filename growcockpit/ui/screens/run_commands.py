"""The dashboard's commands: who may send one, the dialogs before it, and its outcome.

A `CommandDesk` is a part of the dashboard (dashboard.py) that draws nothing: the
screen's command keys call it. Each command checks the run is live and this cockpit
holds the controller role, asks when the command cannot be undone, then sends it over
the control socket in a thread worker (the backend answers at its next step boundary),
shows the answer as a toast and posts it up (`Answered`) so the screen redraws. A
delivered command's log line is the backend's own CommandEvent, so each command leaves
one line, in the order it happened.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import work
from textual.message import Message
from textual.widget import Widget

from growcockpit.protocol import ControlError
from growcockpit.protocol.commands import CommandAck
from growcockpit.session.fold.rollback import blown_up
from growcockpit.session.run_session import RunSession
from growcockpit.ui.screens import command_text as texts
from growcockpit.ui.screens.command_text import command_outcome
from growcockpit.ui.screens.command_text import factor_problem as _factor_problem
from growcockpit.ui.screens.confirm import ConfirmScreen
from growcockpit.ui.screens.prompt import PromptScreen


class CommandDesk(Widget):
    """Commands to the run of `session`; `plan_path`: the plan to edit when the run
    directory has none; `timeout`: how long a command waits for the backend."""

    DEFAULT_CSS = "CommandDesk { display: none; }"

    class Answered(Message):
        """A command's outcome, posted from the command worker (then up to the screen)."""

        def __init__(self, command: str, ack: CommandAck | None, error: str = "") -> None:
            super().__init__()
            self.command = command
            self.ack = ack
            self.error = error

    def __init__(self, session: RunSession, *, plan_path: Path | None, timeout: float) -> None:
        super().__init__()
        self.session = session
        self.plan_path = plan_path
        self.timeout = timeout

    # ---- commands ---------------------------------------------------------
    def _can_command(self, what: str) -> bool:
        with self.session.lock:
            finished, status = self.session.state.finished, self.session.state.status
        if finished:
            self.notify(
                f"The run has {'finished' if status == 'completed' else status}: "
                f"there is no backend left to {what}.",
                title="Run is over",
            )
            return False
        if self.session.read_only:
            self.session.claim_control()
        if self.session.read_only:
            self.notify(
                f"This cockpit is {self.session.role}. Only the controlling cockpit can {what}; "
                "it takes over here by itself once that one leaves.",
                title="Read-only",
                severity="warning",
                timeout=6,
            )
            return False
        return True

    def pause_resume(self) -> None:
        if not self._can_command("pause or resume"):
            return
        with self.session.lock:
            command = "resume" if self.session.state.paused else "pause"
        self.send(command)

    def checkpoint(self) -> None:
        if self._can_command("checkpoint"):
            self.send("checkpoint")

    def advance(self) -> None:
        if not self._can_command("advance"):
            return
        with self.session.lock:
            nxt = self.session.state.next_stage()
            known = bool(self.session.state.stages)
            cur = self.session.state.stage_name or "the current stage"
            done, steps = self.session.state.stage_progress, self.session.state.stage_steps
            n = self.session.state.num_stages
        if known and nxt is None:
            self.notify(
                f"{cur} is the last stage: there is no next stage to advance to.",
                title="Nothing to advance to",
                severity="warning",
            )
            return
        if nxt is None:
            title, body = "Advance to the next stage now?", "The backend ends the current stage."
        else:
            title = f"Advance to stage {nxt.index + 1}/{n} “{nxt.name}” now?"
            body = f"{cur} ends early ({done}/{steps} steps done).\nNext: {nxt.describe()}."
        self.app.push_screen(ConfirmScreen(title, body, yes="Advance"), self._confirmed("advance"))

    def stop(self) -> None:
        if not self._can_command("stop"):
            return
        self.app.push_screen(
            ConfirmScreen(
                "Stop the run?",
                "The backend saves a checkpoint, then ends cleanly.\n"
                "The run can be resumed later from that checkpoint.",
                yes="Stop",
            ),
            self._confirmed("stop"),
        )

    def scale_lr(self) -> None:
        if not self._can_command("change the learning rate"):
            return
        with self.session.lock:
            body = texts.lr_body(self.session.state.lr, self.session.state.lr_scale)

        def done(value: str | None) -> None:
            if value:
                self.send("set_lr", {"factor": float(value)})

        self.app.push_screen(
            PromptScreen("Scale the learning rate", body, "0.5", check=_factor_problem, ok="Send"),
            done,
        )

    def rollback(self) -> None:
        if not self._can_command("roll back"):
            return
        with self.session.lock:
            if blown_up(self.session.state):
                self._offer_blow_up_rollback()
                return
            body = texts.rollback_body(
                self.session.state.step,
                self.session.state.last_checkpoint,
                list(self.session.state.plan_edit_steps),
            )

        def done(value: str | None) -> None:
            if value is not None:
                self.send("rollback", texts.rollback_args(value))

        prompt = PromptScreen(
            "Roll back to a checkpoint?", body, check=texts.rollback_step_problem, ok="Roll back"
        )
        self.app.push_screen(prompt, done)

    def _offer_blow_up_rollback(self) -> None:
        """After a NaN or spike pause: back to the last good checkpoint at the LR scale the
        user types (a tenth of the one that blew up is offered), then resume: one key press
        and Enter get the run training on. Called with the state lock held."""
        state = self.session.state
        body = texts.blow_up_body(
            state.pause_reason, state.step, state.lr_scale, state.last_checkpoint
        )

        def done(value: str | None) -> None:
            if value is not None:
                self.send("rollback", {"lr_scale": float(value)}, then="resume")

        prompt = PromptScreen(
            "Roll back to the last good checkpoint?",
            body,
            texts.suggested_scale(state.lr_scale),
            check=texts.rollback_scale_problem,
            ok="Roll back and resume",
        )
        self.app.push_screen(prompt, done)

    def edit_stages(self) -> None:
        if not self._can_command("edit stages"):
            return
        from growcockpit.ui.screens.designer import DesignerScreen

        with self.session.lock:
            started = self.session.state.started_stages()
            total = self.session.state.num_stages
        if total and started >= total:
            self.notify(
                "Every stage has started: there are no remaining stages to edit.",
                title="Nothing to edit",
                severity="warning",
            )
            return
        path = (
            self.session.client.paths.plan
            if self.session.client.paths.plan.exists()
            else self.plan_path
        )
        if path is None or not path.exists():
            self.notify(
                f"{self.session.client.paths.plan}: missing; cannot edit stages", severity="error"
            )
            return

        def done(stages: list[dict[str, Any]] | None) -> None:
            if stages is not None:
                self.send("edit_stages", {"stages": stages})

        # building the editor takes seconds on a loaded machine: say so first, then build it
        self.notify("opening the stage editor…", title="Edit stages", timeout=10)
        editor = DesignerScreen(path, locked_stages=max(0, started))
        self.set_timer(0.1, lambda: self.app.push_screen(editor, done))

    def _confirmed(self, command: str) -> Callable[[bool | None], None]:
        def callback(yes: bool | None) -> None:
            if yes:
                self.send(command)

        return callback

    def send(self, command: str, args: dict[str, Any] | None = None, then: str = "") -> None:
        """Send `command`; `then`: a second command (no args), sent once the first is accepted
        (in one worker, so the backend gets them in this order)."""
        self.notify(f"{command}: sent, waiting for the backend's answer…", timeout=3)
        self._send_worker(command, args or {}, then)

    @work(thread=True, group="command", exit_on_error=False)
    def _send_worker(self, command: str, args: dict[str, Any], then: str = "") -> None:
        ack = self._send_one(command, args)
        if then and ack is not None and ack.accepted:
            self._send_one(then, {})

    def _send_one(self, command: str, args: dict[str, Any]) -> CommandAck | None:
        try:
            ack = self.session.send(command, args, timeout=self.timeout)
        except ControlError as exc:
            self.post_message(self.Answered(command, None, str(exc)))
        except Exception as exc:  # anything else is still a failed command, not a crash
            self.post_message(self.Answered(command, None, f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(self.Answered(command, ack))
            return ack
        return None

    def on_command_desk_answered(self, message: Answered) -> None:
        """Tell the outcome; the message goes on up to the screen, which redraws."""
        out = command_outcome(message.command, message.ack, message.error)
        self.notify(out.text, title=out.title, severity=out.severity, timeout=out.timeout)
        if message.ack is None:  # delivered, the backend logs it (its CommandEvent, in order)
            self.session.note("cockpit", out.text, out.log_severity)
