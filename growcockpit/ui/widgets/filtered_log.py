"""A scrolling log that keeps its last lines, rewraps them at its width and shows only
those the dashboard's `/` filter matches: the base of the event log and the console.

RichLog wraps a line when it is written, so the lines are kept as Text and
written again whenever the width or the filter changes; lines that arrive
while the log is hidden (a tab not shown has no width) are written once it
shows, at its width then.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.widgets import RichLog

from growcockpit.session.view_filter import ViewFilter


class FilteredLog(RichLog):
    def __init__(self, *, max_lines: int, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, max_lines=max_lines, wrap=True, markup=False, min_width=20)
        self._keep = max_lines
        self._texts: list[Text] = []
        self._width = 0  # the width the lines shown were wrapped at
        self._stale = False  # lines arrived (or the filter changed) while hidden
        self.view_filter = ViewFilter()

    @property
    def kept(self) -> list[str]:
        """Every line kept, shown or filtered out, as plain text."""
        return [t.plain for t in self._texts]

    @property
    def shown(self) -> list[str]:
        """The lines the filter lets through, as plain text (for tests and scripts)."""
        return [t.plain for t in self._texts if self.view_filter.matches(t.plain)]

    def set_filter(self, view_filter: ViewFilter) -> None:
        self.view_filter = view_filter
        self._stale = True
        self._rewrap()
        self._describe()

    def on_resize(self, event: events.Resize) -> None:
        self._rewrap()

    def on_show(self, event: events.Show) -> None:
        self._rewrap()

    def _content_width(self) -> int:
        width = self.scrollable_content_region.width
        return width if width >= self.min_width else 0

    def _rewrap(self) -> None:
        width = self._content_width()
        if width and (width != self._width or self._stale):
            self._width, self._stale = width, False
            self.clear()
            for text in self._texts:
                if self.view_filter.matches(text.plain):
                    self._write(text)
            if self.auto_scroll:
                self.scroll_end(animate=False, immediate=True)

    def _write(self, text: Text) -> None:
        # An explicit width: RichLog otherwise measures against the console width,
        # which is not the widget's (long lines wrapped early in headless runs).
        self.write(text, width=self._width)

    def _describe(self) -> None:
        self.border_subtitle = self.view_filter.describe(len(self.shown), len(self._texts))

    def add_texts(self, texts: list[Text]) -> None:
        """Keep `texts` and draw those the filter matches (now if shown, else once shown)."""
        if not texts:
            return
        visible = bool(self._width) and self._content_width() == self._width
        wrote = False
        for text in texts:
            self._texts.append(text)
            if not visible:
                self._stale = True
            elif self.view_filter.matches(text.plain):
                self._write(text)
                wrote = True
        del self._texts[: -self._keep]
        if wrote and self.auto_scroll:
            self.scroll_end(animate=False, immediate=True)
        if self.view_filter.active:
            self._describe()
