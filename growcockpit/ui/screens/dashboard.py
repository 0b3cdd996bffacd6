"""The live view of one run: header, loss curve, per-layer table, event log, commands.

A thread worker tails events.jsonl and folds events into a `RunState` under a
lock; timers flush text at 4 Hz and the plot at 2 Hz (only when its data
changed). Commands go over the control socket in a thread worker, since the
backend answers at its next step boundary.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer
from textual.worker import get_current_worker

from growcockpit.protocol import ControlError
from growcockpit.protocol.commands import CommandAck
from growcockpit.ui.run_client import RunClient
from growcockpit.ui.run_state import RunState
from growcockpit.ui.screens.confirm import ConfirmScreen
from growcockpit.ui.widgets import EventLogPanel, LayerTable, LossPlot, RunHeader

TEXT_FLUSH_S = 0.25  # ≤ 4 Hz
PLOT_FLUSH_S = 0.5  # ≤ 2 Hz
POLL_S = 0.2  # how often the tail worker looks for new lines
ALIVE_CHECK_S = 2.0
READ_CHUNK = 5000


class DashboardScreen(Screen[None]):
    BINDINGS = [
        Binding("p", "pause_resume", "Pause/resume"),
        Binding("g", "advance", "Next stage"),
        Binding("c", "checkpoint", "Checkpoint"),
        Binding("s", "stop", "Stop"),
        Binding("q", "leave", "Leave"),
    ]

    class CommandDone(Message):
        """A command's outcome, posted from the command worker."""

        def __init__(self, command: str, ack: CommandAck | None, error: str = "") -> None:
            super().__init__()
            self.command = command
            self.ack = ack
            self.error = error

    def __init__(
        self,
        run_dir: Path,
        *,
        clock: Callable[[], float] = time.time,
        command_timeout: float = 60.0,
        plan_path: Path | None = None,
    ) -> None:
        super().__init__()
        self.run_dir = Path(run_dir)
        self.plan_path = Path(plan_path) if plan_path is not None else None
        self.client = RunClient(self.run_dir)
        self.state = RunState()
        self.state_lock = threading.Lock()
        self.clock = clock
        self.command_timeout = command_timeout
        self.caught_up = False  # the tail has reached the end of the log at least once
        self._plan_loaded = False

    def compose(self) -> ComposeResult:
        yield RunHeader(id="run-header")
        with Horizontal(id="dash-main"):
            yield LossPlot(id="loss-plot")
            yield LayerTable(id="layer-table")
        yield EventLogPanel(id="event-log")
        yield Footer()

    def on_mount(self) -> None:
        plot = self.query_one(LossPlot)
        plot.border_title = "loss  [cyan]│[/]stage [green]│[/]grow [red]│[/]pause"
        self.query_one("#layer-table").border_title = "layers"
        self.query_one("#event-log").border_title = "events"
        self._tail()
        self.set_interval(TEXT_FLUSH_S, self.flush_text)
        self.set_interval(PLOT_FLUSH_S, self.flush_plot)

    # ---- tailing (thread worker) -------------------------------------------
    @work(thread=True, exclusive=True, group="tail", exit_on_error=False)
    def _tail(self) -> None:
        worker = get_current_worker()
        last_alive = 0.0
        while not worker.is_cancelled:
            try:
                events = self.client.read_new(max_events=READ_CHUNK)
            except Exception as exc:  # a broken log must not kill the view
                with self.state_lock:
                    self.state.note("cockpit", f"cannot read events.jsonl: {exc}", "error")
                events = []
                time.sleep(1.0)
            if events:
                with self.state_lock:
                    self.state.apply_all(events)
            if len(events) < READ_CHUNK:
                self.caught_up = True
            now = time.monotonic()
            if now - last_alive >= ALIVE_CHECK_S:
                last_alive = now
                self._check_alive()
            if len(events) < READ_CHUNK:
                time.sleep(POLL_S)

    def _check_alive(self) -> None:
        alive = self.client.backend_alive()
        with self.state_lock:
            before = self.state.backend_alive
            if alive == before:
                return
            self.state.backend_alive = alive
            self.state.version += 1
            if alive is False and before is not False and not self.state.finished:
                code = self.client.exit_code()
                why = f" (exit code {code})" if code is not None else ""
                tail = self.client.log_tail(1)
                detail = f": {tail[0]}" if tail else ""
                self.state.note(
                    "backend", f"backend is not running{why}; see backend.log{detail}", "error"
                )

    # ---- flushing (timers on the event loop) ---------------------------------
    def flush_text(self) -> None:
        with self.state_lock:
            self._load_plan_if_needed()
            self.query_one(RunHeader).show_state(self.state, self.clock())
            self.query_one(LayerTable).show_state(self.state)
            self.query_one(EventLogPanel).show_state(self.state)

    def flush_plot(self) -> None:
        with self.state_lock:
            self.query_one(LossPlot).show_state(self.state)

    def _load_plan_if_needed(self) -> None:
        """Stage names for the header and the advance dialog when events lack the plan.

        The run's own plan.toml wins; the launched plan file stands in until it exists.
        """
        if self._plan_loaded or self.state.stages:
            return
        path = self.client.paths.plan
        if not path.exists():
            if self.plan_path is None or self.state.plan_name:
                return
            path = self.plan_path
        self._plan_loaded = path == self.client.paths.plan
        try:
            from growcockpit.plan import load_plan

            self.state.set_plan(load_plan(path))
        except Exception:  # only cosmetic: the events still drive everything
            self._plan_loaded = True

    # ---- commands ---------------------------------------------------------
    def _live_or_say_so(self, what: str) -> bool:
        with self.state_lock:
            finished, status = self.state.finished, self.state.status
        if finished:
            self.notify(
                f"The run has {'finished' if status == 'completed' else status}: "
                f"there is no backend left to {what}.",
                title="Run is over",
            )
            return False
        return True

    def action_pause_resume(self) -> None:
        if not self._live_or_say_so("pause or resume"):
            return
        with self.state_lock:
            command = "resume" if self.state.paused else "pause"
        self.send(command)

    def action_checkpoint(self) -> None:
        if self._live_or_say_so("checkpoint"):
            self.send("checkpoint")

    def action_advance(self) -> None:
        if not self._live_or_say_so("advance"):
            return
        with self.state_lock:
            nxt = self.state.next_stage()
            known = bool(self.state.stages)
            cur = self.state.stage_name or "the current stage"
            done, steps = self.state.stage_progress, self.state.stage_steps
            n = self.state.num_stages
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

    def action_stop(self) -> None:
        if not self._live_or_say_so("stop"):
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

    def action_leave(self) -> None:
        """Close the cockpit; training goes on (reattach with `growcockpit attach`)."""
        self.app.exit()

    def _confirmed(self, command: str) -> Callable[[bool | None], None]:
        def callback(yes: bool | None) -> None:
            if yes:
                self.send(command)

        return callback

    def send(self, command: str) -> None:
        self.notify(f"{command}: sent, waiting for the backend's answer…", timeout=3)
        self._send_worker(command)

    @work(thread=True, group="command", exit_on_error=False)
    def _send_worker(self, command: str) -> None:
        try:
            ack = self.client.send(command, timeout=self.command_timeout)
        except ControlError as exc:
            self.post_message(self.CommandDone(command, None, str(exc)))
        except Exception as exc:  # anything else is still a failed command, not a crash
            self.post_message(self.CommandDone(command, None, f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(self.CommandDone(command, ack))

    def on_dashboard_screen_command_done(self, message: CommandDone) -> None:
        cmd = message.command
        if message.ack is None:
            text = f"{cmd} not delivered: {message.error}"
            self.notify(text, title="Command failed", severity="error", timeout=8)
            severity = "error"
        elif message.ack.accepted:
            text = f"{cmd} accepted at step {message.ack.step}"
            if message.ack.reason:
                text += f" ({message.ack.reason})"
            self.notify(text, title="Command acknowledged")
            severity = "good"
        else:
            text = f"{cmd} refused: {message.ack.reason or 'no reason given'}"
            self.notify(text, title="Command refused", severity="warning", timeout=8)
            severity = "warning"
        with self.state_lock:
            self.state.note("cockpit", text, severity)
        self.flush_text()
