"""The dashboard's top lines: plan, status, stage and progress, step, tokens, elapsed, ETAs."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from growcockpit.protocol.run_notes import RunNotes
from growcockpit.protocol.startup_phases import starting_line
from growcockpit.session.fold.plateau import plateau_label
from growcockpit.session.run_state import RunState
from growcockpit.ui.widgets.text_bits import human_count

STATUS_STYLE = {
    "live": "bold green",
    "paused": "bold yellow",
    "completed": "bold cyan",
    "stopped": "bold yellow",
    "crashed": "bold red",
    "no backend": "bold red",
    "starting": "bold",
}


def format_duration(seconds: float) -> str:
    seconds = int(max(0.0, seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}"


def progress_bar(done: int, total: int, width: int = 12) -> str:
    if total <= 0:
        return "░" * width
    filled = round(width * min(1.0, done / total))
    return "█" * filled + "░" * (width - filled)


def _eta(state: RunState, seconds: float | None) -> str:
    if state.finished:  # only a completed run is done; a stopped or crashed one is not
        return "done" if state.status == "completed" else "–"
    if state.paused:
        return "paused"
    if seconds is None or state.backend_alive is False:
        return "–"
    return format_duration(seconds)


def starting_phase(state: RunState, now: float | None) -> str:
    """ "starting: building the token cache 4.1 s": the phase under way, for how long so far
    (to `now` while live, else to the last event)."""
    end = now if now is not None else (state.t_last or state.startup_since)
    return starting_line(state.startup_phase, end - state.startup_since)


def fit_role(role: str, room: int) -> str:
    """The cockpit's role in `room` columns: "read-only: controlled by pid 4242 on host"
    wrapped the header's last line over two at 80 columns. Shorter forms first (the
    words, then the host), then cut with a …; "read-only" itself always stays."""
    forms = [role]
    if role.startswith("read-only"):
        forms.append(role.replace("controlled by ", "", 1))
        forms.append(forms[-1].split(" on ", 1)[0])
    for form in forms:
        if len(form) <= room:
            return form
    keep = "read-only" if role.startswith("read-only") else ""
    return forms[-1][: max(room - 1, len(keep))] + "…" if room > len(keep) else keep or role[:1]


def header_text(
    state: RunState,
    now: float | None = None,
    width: int = 160,
    role: str = "",
    notes: RunNotes | None = None,
) -> Text:
    """Three lines; a pure function of the state, the width, `role`, the run's `notes`
    (its tags and note, cut to what the last line leaves) and `now` while live.

    Below 120 columns the run id, lr and bar are left out so each line fits 80.
    """
    wide = width >= 120
    status = state.display_status()
    line = Text()
    line.append(state.plan_name or "(unknown plan)", style="bold")
    if state.trainer:  # a tracked run: the user's own loop trains it
        line.append(f"  via {state.trainer}", style="italic")
    if state.run_id and wide:
        line.append(f"  {state.run_id}", style="dim")
    line.append("  ● ", style=STATUS_STYLE.get(status, "bold"))
    line.append(status, style=STATUS_STYLE.get(status, "bold"))
    if status == "starting" and state.startup_phase:
        line.append(starting_phase(state, now).removeprefix("starting"))
    if state.stage_index >= 0:
        n = state.num_stages or state.stage_index + 1
        line.append(f"   stage {state.stage_index + 1}/{n} ")
        line.append(state.stage_name or "?", style="bold")
        if state.stage_steps:
            done = min(state.stage_progress, state.stage_steps)
            bar = f" {progress_bar(done, state.stage_steps)}" if wide else ""
            line.append(f"{bar} {done}/{state.stage_steps}")
        if state.stage_advance == "manual":
            line.append(" (manual advance)" if wide else " (manual)", style="italic")
        elif state.stage_advance == "plateau":
            line.append(plateau_label(state, wide), style="italic")
    line.append("\n")
    total = f"/{state.total_steps}" if state.total_steps else ""
    line.append(f"step {state.step}{total}")
    if state.loss is not None:
        line.append(f" · loss {state.loss:.4f}")
    if state.val_loss is not None:
        line.append(f" · val {state.val_loss:.4f}")
    if state.val_accuracy is not None:  # exact-match accuracy of the last evaluation
        line.append(f" · acc {state.val_accuracy:.1%}")
    if state.tokens_per_s:
        line.append(f" · {state.tokens_per_s:,.0f} tok/s")
    if state.lr is not None and wide:
        line.append(f" · lr {state.lr:.2e}")
        if state.lr_scale != 1.0:
            line.append(f" (×{state.lr_scale:g})", style="bold")
    line.append(f" · {'elapsed ' if wide else ''}{format_duration(state.elapsed(now))}")
    line.append("\n")
    line.append(f"tokens {human_count(state.tokens)}")
    line.append(f" · ETA stage {_eta(state, state.eta_stage())}")
    line.append(f" · run {_eta(state, state.eta_run())}")
    if role:
        role = fit_role(role, width - len(line.plain.rsplit("\n", 1)[-1]) - 2)
        line.append("  ")
        line.append(role, style="bold reverse" if role.startswith("read-only") else "dim")
    room = width - len(line.plain.rsplit("\n", 1)[-1]) - 3
    if notes and room >= 8:
        line.append("  ")
        line.append(notes.summary(room), style="italic")
    return line


class RunHeader(Static):
    """Re-renders only when its text changes."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__("", id=id)
        self._last = ""
        self.notes = RunNotes()  # the run's note and tags (the dashboard reads notes.json)

    def show_state(self, state: RunState, now: float | None = None, role: str = "") -> None:
        width = self.size.width or self.app.size.width
        text = header_text(state, now, width, role, self.notes)
        status = state.display_status()
        for name in ("live", "paused", "completed", "stopped", "crashed"):
            self.set_class(status == name, f"-{name}")
        self.set_class(status == "no backend", "-lost")
        if text.plain != self._last:
            self._last = text.plain
            self.update(text)
