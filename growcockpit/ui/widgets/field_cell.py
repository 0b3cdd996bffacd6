"""One field of a plan form: its label, its editor and its problem line, a cell of the form's grid.

A cell is built with its form, or, for a field that most stages hide (an operator's options,
the plateau's window, fill, the warm-up after an operator), only when it is first shown. The
stage editor that `e` opens on a running run paid Textual's per-widget cost (styles, layout,
the first render) for every field of the stage form, shown or not; a Select alone is six
widgets. An unbuilt cell is one empty widget, hidden, that keeps its place (and its id) in the
grid, so the fields keep their order and look once it is built. Its editor is `ready` once
mounted: until then its form keeps what the field should show and hands it over then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Label, Select, Static

from growcockpit.ui.widgets.field_input import FieldInput
from growcockpit.ui.widgets.section_fields import DEFAULT_CHOICE, Field


def safe(key: str) -> str:
    """A plan key as a widget id part (ids take no "." and the forms use "-")."""
    return key.replace(".", "-").replace("_", "-")


def shown(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def editor_for(field: Field, wid: str, value: Any) -> Widget:
    """A Select for a choice (bools too), else a FieldInput, showing `value`."""
    if field.kind in ("choice", "bool", "opt_bool"):
        choices = field.choices if field.kind != "bool" else ("true", "false")
        current = (
            shown(value)
            if value is not None
            else (DEFAULT_CHOICE if DEFAULT_CHOICE in choices else choices[0])
        )
        if field.kind == "bool" or field.kind == "opt_bool" and value is not None:
            current = "true" if value else "false"
        options = list(choices) if current in choices else [*choices, current]
        select: Widget = Select(
            [(c, c) for c in options], value=current, allow_blank=False, compact=True, id=wid
        )
        select.tooltip = field.help or None
        return select
    editor = FieldInput(shown(value), id=wid, compact=True, placeholder=field.help)
    editor.tooltip = field.help or None  # the whole hint where a narrow field cuts its placeholder
    return editor


class FieldCell(Vertical):
    """The cell of `field` in a form whose ids start with `prefix` and whose labels are
    `width` wide; `lazy`: built on the first `build` (hidden until then), else at once."""

    def __init__(
        self, field: Field, prefix: str, width: int, value: Any = None, *, lazy: bool = False
    ) -> None:
        super().__init__(classes="field", id=f"{prefix}{safe(field.key)}-cell")
        self.field = field
        self.prefix = prefix
        self.width = width
        self._value = value
        self.built = self.ready = not lazy
        # label | editor on one row, the problem line under both: a grid, not a row container
        # in a column (one widget fewer a field, the same cells on screen)
        self.styles.layout = "grid"
        self.styles.grid_size_columns = 2
        self.styles.grid_columns = f"{width} 1fr"
        self.styles.grid_rows = "1 auto"
        if lazy:
            self.display = False

    def compose(self) -> ComposeResult:
        if self.built:
            yield from self._parts(self._value, disabled=False, problem="")

    def build(
        self, value: Any, *, disabled: bool, problem: str, on_ready: Callable[[], None]
    ) -> None:
        """Mount the label, editor and problem line, showing `value` (once); `on_ready` runs
        when they are mounted (the form then shows what changed meanwhile)."""
        if self.built:
            return
        self.built = True
        self.mount_all(self._parts(value, disabled=disabled, problem=problem))
        self.call_next(self._mounted, on_ready)  # after the mount, which this pump awaits first

    def _mounted(self, on_ready: Callable[[], None]) -> None:
        self.ready = True
        on_ready()

    def _parts(self, value: Any, *, disabled: bool, problem: str) -> list[Widget]:
        wid = f"{self.prefix}{safe(self.field.key)}"
        label = Label(self.field.label, classes="field-label")
        label.styles.width = self.width
        editor = editor_for(self.field, wid, value)
        editor.disabled = disabled
        error = Static(  # a problem names tables ("add [model]") and echoes what was typed
            problem, id=f"{wid}-err", classes="field-error", markup=False
        )
        error.styles.padding = (0, 0, 0, self.width)
        error.display = bool(problem)
        error.styles.column_span = 2
        return [label, editor, error]
