"""The run's notable events: stages, grows, checkpoints, commands, warnings, errors."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.widgets import RichLog

from growcockpit.session.run_state import LogEntry, RunState
from growcockpit.ui.widgets.run_header import format_duration

MAX_LINES = 1000
SEVERITY_STYLE = {"info": "", "good": "green", "warning": "yellow", "error": "bold red"}


def entry_text(entry: LogEntry) -> Text:
    text = Text()
    text.append(f"+{format_duration(entry.t)} ", style="dim")
    step = "" if entry.step is None else str(entry.step)
    text.append(f"{step:>7} ", style="dim")
    text.append(f"{entry.kind:<10} ", style="bold")
    text.append(entry.text, style=SEVERITY_STYLE.get(entry.severity, ""))
    for line in entry.detail.splitlines():
        text.append(f"\n{'':>18}│ {line}", style="red")
    return text


class EventLogPanel(RichLog):
    """Appends only the entries it has not shown yet."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id, max_lines=MAX_LINES, wrap=True, markup=False, min_width=20)
        self._next = 0
        self._texts: list[Text] = []
        self._width = 0  # the width the lines shown were wrapped at
        self._stale = False  # entries arrived while hidden: rewrap when shown

    @property
    def shown(self) -> list[str]:
        """The lines shown, as plain text (for tests and scripts)."""
        return [t.plain for t in self._texts]

    def on_resize(self, event: events.Resize) -> None:
        self._rewrap()

    def on_show(self, event: events.Show) -> None:
        self._rewrap()

    def _content_width(self) -> int:
        """The width lines wrap at; 0 while hidden (a tab not shown has no width)."""
        width = self.scrollable_content_region.width
        return width if width >= self.min_width else 0

    def _rewrap(self) -> None:
        # RichLog wraps at write time: rewrap everything when the width changes, and
        # write what arrived while hidden (never at a hidden tab's width) once it shows.
        width = self._content_width()
        if width and (width != self._width or self._stale):
            self._width, self._stale = width, False
            self.clear()
            for text in self._texts:
                self._write(text)
            if self.auto_scroll:
                self.scroll_end(animate=False, immediate=True)

    def _write(self, text: Text) -> None:
        # An explicit width: RichLog otherwise measures against the console width,
        # which is not the widget's (long lines wrapped early in headless runs).
        self.write(text, width=self._width)

    def show_state(self, state: RunState) -> None:
        wrote = False
        visible = bool(self._width) and self._content_width() == self._width
        for entry in state.log:
            if entry.n < self._next:
                continue
            text = entry_text(entry)
            self._texts.append(text)
            if visible:
                self._write(text)
                wrote = True
            else:
                self._stale = True  # drawn when it shows, at its width then
            self._next = entry.n + 1
        del self._texts[:-MAX_LINES]
        if wrote and self.auto_scroll:
            self.scroll_end(animate=False, immediate=True)
