"""The launch dialog: which device and how many processes, then go."""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from growcockpit.ui.widgets.field_input import FieldInput


@dataclass(frozen=True)
class LaunchOptions:
    device: str = ""  # "" = the backend's default (cuda if available)
    nproc: int = 1  # processes per node (DDP when > 1)


def device_problem(device: str) -> str:
    d = device.strip()
    if not d or d in ("cpu", "cuda", "mps") or (d.startswith("cuda:") and d[5:].isdigit()):
        return ""
    return "use cpu, cuda, cuda:N or leave it empty (cuda if available)"


def nproc_problem(text: str) -> str:
    try:
        n = int(text.strip() or "1")
    except ValueError:
        return "a whole number ≥ 1"
    return "" if n >= 1 else "a whole number ≥ 1"


class LaunchScreen(ModalScreen[LaunchOptions | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, plan_name: str, where: str, summary: str = "") -> None:
        super().__init__()
        self._plan_name, self._where, self._summary = plan_name, where, summary

    def compose(self) -> ComposeResult:
        with Vertical(id="launch-box", classes="dialog"):
            yield Static(f"Launch “{self._plan_name}”", classes="dialog-title", markup=False)
            body = f"The run goes to {self._where}/ and keeps training when you leave the cockpit."
            if self._summary:
                body = f"{self._summary}\n{body}"
            yield Static(body, classes="dialog-body", markup=False)
            with Horizontal(classes="field-row"):
                yield Label("device", classes="field-label")
                yield FieldInput(
                    "",
                    placeholder="auto: cuda if available, else cpu",
                    id="launch-device",
                    compact=True,
                )
            yield Static("", id="launch-device-err", classes="field-error", markup=False)
            with Horizontal(classes="field-row"):
                yield Label("processes", classes="field-label")
                yield FieldInput("1", id="launch-nproc", compact=True)
            yield Static("", id="launch-nproc-err", classes="field-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Launch (Enter)", id="go", variant="success")
                yield Button("Cancel (Esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#go", Button).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self._check()

    def _check(self) -> bool:
        d = device_problem(self.query_one("#launch-device", Input).value)
        n = nproc_problem(self.query_one("#launch-nproc", Input).value)
        self.query_one("#launch-device-err", Static).update(d)
        self.query_one("#launch-nproc-err", Static).update(n)
        return not d and not n

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._go()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "go":
            self._go()
        else:
            self.dismiss(None)

    def _go(self) -> None:
        if not self._check():
            return
        device = self.query_one("#launch-device", Input).value.strip()
        nproc = int(self.query_one("#launch-nproc", Input).value.strip() or "1")
        self.dismiss(LaunchOptions(device, nproc))

    def action_cancel(self) -> None:
        self.dismiss(None)
