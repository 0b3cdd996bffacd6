"""The Console tab: the backend's stdout and stderr (`backend.log`), followed live.

Reading is the `ConsoleTail`'s (growcockpit.session.console_tail), run in this
widget's own thread worker, so the event loop never touches the disk; a timer
draws the lines read since, at most four times a second. The tail keeps the
last lines only, and so does the widget.
"""

from __future__ import annotations

import re
import time

from rich.text import Text
from textual import work
from textual.worker import get_current_worker

from growcockpit.session.console_tail import ABSENT_NOTE, MAX_LINES, ConsoleLine, ConsoleTail
from growcockpit.ui.widgets.filtered_log import FilteredLog

POLL_S = 0.25
DRAW_S = 0.25
NOTE_STYLE = "italic yellow"
_ERROR = re.compile(r"^Traceback|\b\w*(Error|Exception)\b|\bERROR\b")
_WARNING = re.compile(r"\b\w*Warning\b|\bWARN(ING)?\b")


def line_text(line: ConsoleLine) -> Text:
    if line.kind == "note":
        return Text(line.text, style=NOTE_STYLE)
    if _ERROR.search(line.text):
        return Text(line.text, style="red")
    return Text(line.text, style="yellow" if _WARNING.search(line.text) else "")


class ConsolePanel(FilteredLog):
    """Follows one `ConsoleTail` from mount to unmount."""

    def __init__(self, tail: ConsoleTail, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, max_lines=MAX_LINES)
        self.tail = tail
        self._next = 0
        self._hinted = False

    def on_mount(self) -> None:
        self.border_title = f"console · {self.tail.path.name} (the backend's stdout and stderr)"
        self._follow()
        self.set_interval(DRAW_S, self.draw_new)

    @work(thread=True, exclusive=True, group="console", exit_on_error=False)
    def _follow(self) -> None:
        worker = get_current_worker()
        while not worker.is_cancelled:
            self.tail.poll()
            time.sleep(POLL_S)

    def draw_new(self) -> None:
        """Draw the lines the tail read since the last call (a memory copy, no I/O)."""
        lines = self.tail.since(self._next)
        if not lines and self.tail.absent and not self._hinted:
            self._hinted = True  # once: the file may never come (a foreground `train`)
            self.add_texts([Text(ABSENT_NOTE, style=NOTE_STYLE)])
        if lines:
            self._next = lines[-1].n + 1
            self.add_texts([line_text(ln) for ln in lines])
