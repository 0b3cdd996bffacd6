"""The run's notable events: stages, grows, checkpoints, commands, warnings, errors."""

from __future__ import annotations

from rich.text import Text

from growcockpit.session.run_state import LogEntry, RunState
from growcockpit.ui.widgets.filtered_log import FilteredLog
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


class EventLogPanel(FilteredLog):
    """Appends only the entries it has not shown yet."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id, max_lines=MAX_LINES)
        self._next = 0

    def show_state(self, state: RunState) -> None:
        texts: list[Text] = []
        for entry in state.log:
            if entry.n >= self._next:
                texts.append(entry_text(entry))
                self._next = entry.n + 1
        self.add_texts(texts)
