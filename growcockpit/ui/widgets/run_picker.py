"""A list of runs to pick from, each line marked `[x]` (picked) or `[ ]` (not).

Textual's SelectionList draws the same `▐X▌` for a picked and an unpicked line and tells
them apart by colour only: on some themes (and for a colour-blind user) the two read the
same. The mark here says it in text, whatever the colours."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widgets import OptionList, SelectionList
from textual.widgets.option_list import OptionDoesNotExist

PICKED, NOT_PICKED = "[x] ", "[ ] "  # as wide as SelectionList's button and its space


def mark(picked: bool) -> str:
    """The text a line starts with."""
    return PICKED if picked else NOT_PICKED


class RunPicker(SelectionList[str]):
    """SelectionList with a text mark in place of its colour-only toggle button."""

    def _get_left_gutter_width(self) -> int:
        return len(PICKED)

    def render_line(self, y: int) -> Strip:
        line = OptionList.render_line(self, y)  # the prompt, without SelectionList's button
        index = self.scroll_offset.y + y
        try:
            option = self.get_option_at_index(index)
        except OptionDoesNotExist:
            return line
        picked = option.value in self._selected
        base = next(iter(line)).style or self.rich_style
        style = base + Style(bold=picked, meta={"option": index})
        return Strip([Segment(mark(picked), style), *line])
