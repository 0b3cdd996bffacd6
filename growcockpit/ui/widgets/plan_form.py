"""Forms that edit a plan in place: one stage (`StageForm`) or one section (`SectionForm`).

Each field converts what is typed as it is typed and posts `FieldChanged` with
the value (or the conversion problem); the screen applies it to its `Plan`,
runs the plan validator and hands each field its problem (`show_errors`),
shown right under the field.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Container
from textual.message import Message
from textual.widgets import Input, Select, Static

from growcockpit.plan.operators import OPERATOR_NAMES, OPTION_DEFAULTS, operators_with
from growcockpit.plan.types import (
    ADVANCES,
    PAIRINGS,
    STACK_INITS,
    STACK_SOURCES,
    Stage,
)
from growcockpit.ui.widgets.field_cell import FieldCell, safe, shown
from growcockpit.ui.widgets.section_fields import (
    DEFAULT_CHOICE,
    SECTION_TITLES,
    Field,
    family_keys,
    family_only_keys,
    section_fields,
)

STAGE_FIELDS: tuple[Field, ...] = (
    Field("name", "name", "str"),
    Field("enter", "enter", "choice", OPERATOR_NAMES, "operator that builds this stage's model"),
    Field("source", "source", "choice", STACK_SOURCES, "which layers stack copies"),
    Field("init", "init", "choice", STACK_INITS, "zero: new blocks add nothing (GPT-2)"),
    Field("ramp_steps", "ramp", "opt_int", help="fade new blocks in over K steps"),
    Field("pairing", "pairing", "choice", PAIRINGS),
    Field("alpha", "alpha", "opt_float", help="interpolation weight; empty: family default"),
    Field("layers", "layers", "int", help="depth after entering"),
    Field("width", "width", "opt_int", help="empty: keep the width"),
    Field("train", "train", "choice", ("all", "new", "none"), "which layers get gradients"),
    Field("embeddings", "embed", "choice", (DEFAULT_CHOICE, "train", "frozen")),
    Field("head", "head", "choice", ("train", "frozen")),
    Field("steps", "steps", "int"),
    Field("fill", "fill", "bool", help="fit this stage's steps to the [budget]"),
    Field("lr", "lr", "opt_float", help="empty: the optimizer's lr"),
    Field("rewarmup_steps", "rewarm", "opt_int", help="LR warm-up after the operator"),
    Field("layer_drop", "drop", "float", help="skip each middle block with this probability"),
    Field("advance", "advance", "choice", ADVANCES, "manual: wait for `g` at the end"),
    Field("patience", "patience", "opt_int", help="plateau: window in steps"),
    Field("min_delta", "min Δ", "opt_float", help="plateau: loss drop per 1M tokens; empty: 0"),
)
PLATEAU_FIELDS = ("patience", "min_delta")  # shown only when advance = "plateau"
# operator options show only for the operators that take them (the operator table)
OPERATOR_FIELDS = {f.key: operators_with(f.key) for f in STAGE_FIELDS if f.key in OPTION_DEFAULTS}
# the fields most stages hide: their cells are built when first shown (field_cell.py)
LAZY_FIELDS = frozenset([*OPERATOR_FIELDS, *PLATEAU_FIELDS, "fill", "rewarmup_steps"])


def convert(field: Field, raw: Any) -> tuple[Any, str]:
    """(value, problem): problem is "" when `raw` fits the field's type."""
    if field.kind == "choice":
        return (None if raw == DEFAULT_CHOICE else raw), ""
    if field.kind == "opt_bool":
        return {"true": True, "false": False}.get(str(raw)), ""
    if field.kind == "bool":
        return raw == "true", ""
    text = str(raw).strip()
    if field.kind == "str":
        return str(raw), ""
    if field.kind.startswith("opt_") and text == "":
        return None, ""
    if field.kind == "opt_str":
        return text, ""
    base = field.kind.removeprefix("opt_")
    try:
        if base == "int":
            return int(text), ""
        return float(text), ""
    except ValueError:
        if base == "int":
            return None, "expected a whole number, e.g. 4"
        return None, "expected a number, e.g. 3e-4"


class FieldChanged(Message):
    """A field was edited: `value` is converted, or `problem` says why it could not be."""

    def __init__(self, scope: str, key: str, value: Any, problem: str) -> None:
        super().__init__()
        self.scope = scope  # "stage" or a section name
        self.key = key
        self.value = value
        self.problem = problem


LABEL_MIN = 10


def label_width(fields: tuple[Field, ...]) -> int:
    """One label column per form, as wide as its longest label: a fixed 10 cut
    "intermediate size" to "intermedia" beside its value."""
    return max([LABEL_MIN, *(len(f.label) + 1 for f in fields)])


class _Form(Container):
    prefix = ""
    scope = ""

    def __init__(
        self,
        fields: tuple[Field, ...],
        *,
        id: str | None = None,
        disabled: bool = False,  # noqa: A002
    ) -> None:
        super().__init__(id=id, classes="plan-form", disabled=disabled)
        self.fields = {f.key: f for f in fields}
        self._values: dict[str, Any] = {}
        self._bad: set[str] = set()  # fields whose last announced value was a problem
        # what an unbuilt cell shows once it is built: its field off, its problem
        self._off: dict[str, bool] = {}
        self._problems: dict[str, str] = {}

    def editor(self, key: str) -> Input | Select[str]:
        return self.query_one(f"#{self.prefix}{safe(key)}")  # type: ignore[return-value]

    def cell(self, key: str) -> FieldCell:
        return self.query_one(f"#{self.prefix}{safe(key)}-cell", FieldCell)

    def reveal(self, key: str, show: bool) -> None:
        """Show or hide a field's cell; a cell shown for the first time is built then."""
        cell = self.cell(key)
        cell.display = show
        if show and not cell.built:
            cell.build(
                self._values.get(key),
                disabled=self._off.get(key, False),
                problem=self._problems.get(key, ""),
                on_ready=lambda: self._sync(key),
            )

    def _sync(self, key: str) -> None:
        """A cell built late is mounted: show what was set while it was being built."""
        if key in self._values:
            self._set(key, self._values[key])
        self.set_off(key, self._off.get(key, False))
        self.show_error(key, self._problems.get(key, ""))

    def set_off(self, key: str, off: bool) -> None:
        """Disable (read-only) or enable one field."""
        self._off[key] = off
        if self.cell(key).ready:
            self.editor(key).disabled = off

    def _set(self, key: str, value: Any) -> None:
        """Show `value` in the field without posting FieldChanged."""
        self._values[key] = value
        self._bad.discard(key)
        if not self.cell(key).ready:
            return  # shown when the cell is built (`_sync`)
        widget = self.editor(key)
        field = self.fields[key]
        with widget.prevent(Input.Changed, Select.Changed):
            if isinstance(widget, Input):
                if convert(field, widget.value) != (value, ""):
                    widget.value = shown(value)
            else:
                text = (
                    DEFAULT_CHOICE
                    if value is None and field.kind != "bool"
                    else ("true" if value else "false")
                    if field.kind in ("bool", "opt_bool")
                    else shown(value)
                )
                options = [v for _, v in widget._options if isinstance(v, str)]
                if text not in options:
                    widget.set_options([(c, c) for c in [*options, text]])
                widget.value = text

    def _changed(self, widget_id: str | None, raw: Any) -> None:
        key = next((k for k in self.fields if f"{self.prefix}{safe(k)}" == widget_id), None)
        if key is None or key not in self._values or not self.cell(key).ready:
            return  # not loaded yet: a widget announcing its initial value
        widget = self.editor(key)
        current: Any = widget.value
        if current is Select.BLANK:
            return
        value, problem = convert(self.fields[key], current)  # the widget now, not a stale event
        if not problem and value == self._values[key] and key not in self._bad:
            return
        if problem:
            self._bad.add(key)
        else:
            self._bad.discard(key)
            self._values[key] = value
        self.post_message(FieldChanged(self.scope, key, value, problem))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._changed(event.input.id, event.value)

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if event.value is not Select.BLANK:
            self._changed(event.select.id, event.value)

    def show_error(self, key: str, problem: str) -> None:
        self._problems[key] = problem
        cell = self.cell(key)
        cell.set_class(bool(problem), "-invalid")
        if cell.ready:
            err = self.query_one(f"#{self.prefix}{safe(key)}-err", Static)
            err.update(problem)
            err.display = bool(problem)

    def show_errors(self, problems: dict[str, str]) -> None:
        for key in self.fields:
            self.show_error(key, problems.get(key, ""))


class StageForm(_Form):
    """The fields of one stage; operator options show only for operators that use them."""

    prefix = "sf-"
    scope = "stage"

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(STAGE_FIELDS, id=id)
        self.index = 0
        self.locked = False

    def compose(self) -> ComposeResult:
        yield Static("", id="sf-title", classes="form-title", markup=False)  # a stage name
        with Container(id="sf-grid", classes="form-grid"):
            width = label_width(STAGE_FIELDS)
            for field in STAGE_FIELDS:
                yield FieldCell(field, self.prefix, width, lazy=field.key in LAZY_FIELDS)

    def load(
        self, index: int, stage: Stage, locked: bool = False, fitted: int | None = None
    ) -> None:
        """Show stage `index`; `fitted` is the stage's budget-fitted steps when the plan has
        a budget (the fill field shows then) and this stage fills it (steps read-only)."""
        self.index, self.locked = index, locked
        title = f"stage {index + 1}: {stage.name}"
        if locked:
            title += "  (already started: locked)"
        self.query_one("#sf-title", Static).update(title)
        self._train_choices(stage.layers)
        for key in self.fields:
            self._set(key, getattr(stage, key))
            self.set_off(key, locked)
        self.show_operator(stage.enter)
        # the warm-up after an operator: the first stage has none (it uses warmup_steps)
        self.reveal("rewarmup_steps", index > 0)
        self.show_advance(stage.advance)

    def show_advance(self, advance: str) -> None:
        for key in PLATEAU_FIELDS:
            self.reveal(key, advance == "plateau")

    def show_budget(self, has_budget: bool, fills: bool, steps: int) -> None:
        """The fill field shows only under a budget; a fill stage's steps follow the fit."""
        self.reveal("fill", has_budget)
        if fills:
            self._set("steps", steps)
        self.set_off("steps", self.locked or fills)

    def _train_choices(self, layers: int) -> None:
        choices = ["all", "new", "none"] + [f"top:{k}" for k in range(1, max(1, min(layers, 64)))]
        widget = self.query_one("#sf-train", Select)
        current = widget.value
        if isinstance(current, str) and current not in choices:
            choices.append(current)
        with widget.prevent(Select.Changed):
            widget.set_options([(c, c) for c in choices])
            if isinstance(current, str):
                widget.value = current

    def show_operator(self, enter: str) -> None:
        for key, ops in OPERATOR_FIELDS.items():
            self.reveal(key, enter in ops)

    def on_input_changed(self, event: Input.Changed) -> None:
        super().on_input_changed(event)
        if event.input.id == "sf-layers":
            value, problem = convert(self.fields["layers"], event.value)
            if not problem and value:
                self._train_choices(int(value))

    def on_select_changed(self, event: Select.Changed) -> None:
        super().on_select_changed(event)
        if event.select.id == "sf-enter" and isinstance(event.value, str):
            self.show_operator(event.value)
        if event.select.id == "sf-advance" and isinstance(event.value, str):
            self.show_advance(event.value)


class SectionForm(_Form):
    """One section of a plan (`model`, `data`, `optim`; `plan` for name/description/seed)."""

    def __init__(
        self,
        section: str,
        spec: Any,
        *,
        id: str | None = None,
        disabled: bool = False,  # noqa: A002
    ) -> None:
        self.section = section
        fields = section_fields(section, spec)
        super().__init__(fields, id=id, disabled=disabled)
        self.prefix = f"{section}-"
        self.scope = section
        self._spec = spec
        self._values = {key: getattr(spec, key) for key in self.fields}

    def compose(self) -> ComposeResult:
        if self.section in SECTION_TITLES:  # "[budget]: …" is text, not markup
            yield Static(SECTION_TITLES[self.section], classes="form-title", markup=False)
        with Container(classes="form-grid"):
            width = label_width(tuple(self.fields.values()))
            for field in self.fields.values():
                yield FieldCell(field, self.prefix, width, getattr(self._spec, field.key))

    def show_errors(self, problems: dict[str, str]) -> None:
        """A problem of the whole section ("*") shows under its first field."""
        wide = problems.get("*")
        if wide:
            first = next(iter(self.fields))
            problems = {**problems, first: problems.get(first) or wide}
        super().show_errors(problems)

    def load(self, spec: Any) -> None:
        self._spec = spec
        for key in self.fields:
            self._set(key, getattr(spec, key))
        self.show_family()

    def on_mount(self) -> None:
        self.show_family()

    def show_family(self, family: str | None = None) -> None:
        """[model] keys only some families take show only for those families."""
        if self.section != "model":
            return
        name = str(family or getattr(self._spec, "family", ""))
        for key in family_only_keys(name):
            self.cell(key).display = False
        for key in family_keys(name):
            self.cell(key).display = True

    def on_select_changed(self, event: Select.Changed) -> None:
        super().on_select_changed(event)
        if event.select.id == f"{self.prefix}family" and isinstance(event.value, str):
            self.show_family(event.value)
