"""A modal list of runs to pin as the dashboard's baseline (or to unpin the one pinned)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from growcockpit.session.catalog import RunEntry

Picked = Path | Literal["unpin"] | None  # None: cancelled
UNPIN = "\x00unpin"


def run_line(entry: RunEntry) -> str:
    loss = f"loss {entry.loss:.3f}" if entry.loss is not None else "no loss yet"
    plan = f" · {entry.plan}" if entry.plan and entry.plan != entry.name else ""
    return f"{entry.name}{plan} · {entry.status} · step {entry.step} · {loss}"


class PickRunScreen(ModalScreen[Picked]):
    """Enter pins the highlighted run, "no baseline" unpins, Escape leaves it as it was."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, runs: list[RunEntry], pinned: Path | None) -> None:
        super().__init__()
        self._runs, self._pinned = runs, pinned

    def compose(self) -> ComposeResult:
        with Vertical(id="pick-box", classes="dialog"):
            yield Static("Pin a baseline run", classes="dialog-title")
            body = (
                "Its validation loss is drawn on the loss plot, and the plot's lower border "
                "says when this run reached its final loss. Runs named a baseline come first."
            )
            yield Static(body, classes="dialog-body", markup=False)
            pinned = self._pinned.resolve() if self._pinned is not None else None
            options = [
                Option(
                    run_line(r) + (" · pinned" if r.path.resolve() == pinned else ""),
                    id=str(r.path),
                )
                for r in self._runs
            ]
            if self._pinned is not None:
                options.insert(0, Option("no baseline (unpin)", id=UNPIN))
            if not options:
                yield Static("No other runs in this runs directory yet.", classes="dialog-hint")
            yield OptionList(*options, id="pick-runs")
            yield Static("Enter pins · Esc cancels", classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        picked = event.option.id
        self.dismiss("unpin" if picked == UNPIN else Path(picked) if picked else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
