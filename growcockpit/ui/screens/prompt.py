"""Small modals: a one-line question (`PromptScreen`) and the key help (`HelpScreen`)."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from growcockpit.ui.screens.help_keys import key_columns, keys_of
from growcockpit.ui.widgets.field_input import FieldInput

Check = Callable[[str], str]  # returns "" when the value is fine, else the problem


class PromptScreen(ModalScreen[str | None]):
    """Ask for one value; Enter accepts (when `check` finds no problem), Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        title: str,
        body: str = "",
        value: str = "",
        check: Check | None = None,
        ok: str = "OK",
    ) -> None:
        super().__init__()
        self._title, self._body, self._value, self._ok = title, body, value, ok
        self._check = check or (lambda _v: "")

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box", classes="dialog"):
            yield Static(self._title, id="prompt-title", classes="dialog-title", markup=False)
            if self._body:  # scrolls when long (every run column key): the field stays in view
                with VerticalScroll(id="prompt-body-scroll"):
                    yield Static(self._body, id="prompt-body", classes="dialog-body", markup=False)
            yield FieldInput(self._value, id="prompt-input")
            yield Static("", id="prompt-error", classes="field-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self._ok} (Enter)", id="ok", variant="primary")
                yield Button("Cancel (Esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#prompt-error", Static).update(self._check(event.value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._accept()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "ok":
            self._accept()
        else:
            self.dismiss(None)

    def _accept(self) -> None:
        value = self.query_one(Input).value.strip()
        problem = self._check(value)
        if problem:
            self.query_one("#prompt-error", Static).update(problem)
            return
        self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """What this screen is for and every key it answers to."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, title: str, intro: str, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self._title, self._intro, self._keys = title, intro, keys

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box", classes="dialog"):
            yield Static(self._title, classes="dialog-title")
            with VerticalScroll(id="help-scroll"):
                # every key first, in columns: under the long text only the first nine showed
                yield Static(key_columns(self._keys), id="help-keys")
                intro = reflow(self._intro)  # plain text: "[ and ]" are keys, not markup
                yield Static(intro, id="help-intro", classes="dialog-body", markup=False)
            yield Static(
                "Esc or ? closes · ↓ scrolls the text · ctrl+p lists every action",
                classes="dialog-hint",
            )

    def action_close(self) -> None:
        self.dismiss(None)


def reflow(text: str) -> str:
    """Help text as paragraphs the widget wraps once, at its own width.

    The texts are written with line breaks at ~88 columns; kept, each line would
    wrap again in a narrower box, leaving an orphan word on a line of its own.
    A blank line still separates paragraphs, and a line starting with a space, a
    dash or a bullet keeps its break (a list item).
    """
    out: list[str] = []
    for paragraph in text.split("\n\n"):
        lines: list[str] = []
        for line in paragraph.splitlines():
            if lines and not line.startswith((" ", "-", "•", "·")):
                lines[-1] += " " + line.strip()
            else:
                lines.append(line.rstrip())
        out.append("\n".join(lines))
    return "\n\n".join(out)


__all__ = ["HelpScreen", "PromptScreen", "keys_of", "reflow"]
