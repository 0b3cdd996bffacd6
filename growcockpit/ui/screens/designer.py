"""The plan designer: edit a plan's stages and sections in place, validated as you type.

Every keystroke updates the screen's own `Plan`, which is re-checked with the
same validator as `growcockpit plan validate` (`edited_plan_problems`); each problem
is shown under its field, its stage row is marked ⚠, and the stage timeline
and the cost estimate follow along. Saving edits the original file with
tomlkit, so the user's comments and layout survive (`save_plan(...,
original_text=...)`).

With `locked_stages=k` the designer edits the not-yet-started stages of a
running run: stages before k are shown but locked, and ctrl+s dismisses the
screen with the remaining stages (as `edit_stages` tables) instead of saving.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import (
    Button,
    DataTable,
    Footer,
    Input,
    Select,
    Static,
    TabbedContent,
    TabPane,
    Tabs,
)

from growcockpit.plan import PlanError, fit_budget, load_plan
from growcockpit.plan.budget import apply_fit
from growcockpit.plan.load import edited_plan_problems, model_written
from growcockpit.plan.show import budget_lines
from growcockpit.plan.types import Plan
from growcockpit.session.plan_drafts import (
    display_path,
    estimate,
    new_plan,
    plan_summary,
    unique_name,
)
from growcockpit.ui.screens import designer_sections, designer_status, plan_edits
from growcockpit.ui.screens.confirm import ConfirmScreen
from growcockpit.ui.screens.designer_checks import CHECKING, FileChecking
from growcockpit.ui.screens.designer_sections import BUILDING, pane_scroll
from growcockpit.ui.screens.help_texts import DESIGNER_HELP
from growcockpit.ui.screens.launch import LaunchOptions
from growcockpit.ui.screens.prompt import HelpScreen, keys_of
from growcockpit.ui.widgets import StageTable
from growcockpit.ui.widgets.plan_form import FieldChanged, SectionForm, StageForm
from growcockpit.ui.widgets.timeline import StageTimeline

TABS = (
    ("tab-stages", "Stages"),
    ("tab-model", "Plan & model"),
    ("tab-data", "Data"),
    ("tab-optim", "Optimizer"),
)
TABS_BY_KEY = tuple(enumerate(TABS, start=1))
TAB_TITLES = {tab: f"{i} {label}" for i, (tab, label) in TABS_BY_KEY}  # the key, then the name
STAGE_ACTIONS = ("edit_stages", "move")  # a, d, x, [, ]: the stage table's keys


class DesignerScreen(FileChecking):
    BINDINGS = [
        Binding("a", "edit_stages('add')", "Add"),
        Binding("d", "edit_stages('duplicate')", "Dup"),
        Binding("x,delete", "edit_stages('remove')", "Remove", key_display="x"),
        Binding("left_square_bracket", "move(-1)", "Up", key_display="["),
        Binding("right_square_bracket", "move(1)", "Down", key_display="]"),
        Binding("ctrl+s", "save", "Save", priority=True),
        Binding("ctrl+s", "send", "Send", priority=True),
        Binding("S", "save_as", "Save as", key_display="S"),
        Binding("l", "launch", "Launch"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("escape", "back", "Back"),
        *(Binding(str(i), f"tab('{tab}')", label, show=False) for i, (tab, label) in TABS_BY_KEY),
    ]

    class LaunchRequested(Message):
        def __init__(self, plan_path: Path, options: LaunchOptions | None = None) -> None:
            super().__init__()
            self.plan_path = plan_path
            self.options = options or LaunchOptions()

    def __init__(
        self,
        plan_path: Path | None = None,
        *,
        locked_stages: int | None = None,
        runs_root: Path = Path("runs"),
        draft: Plan | None = None,
    ) -> None:
        super().__init__()
        self.plan_path = Path(plan_path) if plan_path is not None else None
        self.draft = draft
        self.locked = locked_stages or 0
        self.remaining = locked_stages is not None
        self.runs_root = runs_root
        self.plan: Plan | None = None
        self.original_text: str | None = None
        self.error = ""
        self.model_set = True  # False while the file has no [model] and none of its keys was set
        self.dirty = False
        self.cost: Any = None
        self.selected = 0
        self.field_errors: dict[str, str] = {}
        self.problems: list[PlanError] = []
        self._load()

    def _load(self) -> None:
        if self.plan_path is None:
            self.plan = self.draft or new_plan(unique_name("my-plan", set()))
            # a fresh plan is not "modified" until edited; a generated draft ("grow this") is
            # work the user would lose by leaving
            self.dirty = self.draft is not None
            return
        try:
            self.original_text = self.plan_path.read_text(encoding="utf-8")
            self.plan = load_plan(self.plan_path, validate=False)
            self.model_set = model_written(self.original_text)
        except (PlanError, OSError) as exc:
            self.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__

    # ---- building ----------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("", id="plan-title", markup=False)  # plan text: literal
        yield Static("", id="plan-summary", markup=False)
        with TabbedContent(id="designer-tabs", initial="tab-stages"):
            with (
                TabPane(TAB_TITLES["tab-stages"], id="tab-stages"),
                pane_scroll(id="stages-scroll"),
            ):
                yield StageTable(id="stage-table")
                yield StageForm(id="stage-form")
                yield StageTimeline(id="timeline")
            for tab in designer_sections.SECTION_TABS:
                with TabPane(TAB_TITLES[tab], id=tab), pane_scroll():
                    if self.plan is None:
                        continue
                    if self.remaining:  # read-only: built when first shown (`e` opens fast)
                        yield designer_sections.placeholder()
                    else:
                        yield from designer_sections.section_widgets(self.plan, tab, False)
        yield Static("", id="plan-cost", markup=False)  # under every tab, never scrolled
        yield Static("", id="plan-problems", markup=False)
        with Horizontal(id="plan-actions"):
            if self.remaining:
                yield Button("Send to run (ctrl+s)", id="send", variant="success")
            else:
                yield Button("Launch (l)", id="launch", variant="success")
                yield Button("Save (ctrl+s)", id="save")
            yield Static("", id="plan-path", markup=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        if self.plan is None:
            self.query_one("#plan-title", Static).update(
                self.plan_path.name if self.plan_path else ""
            )
            self.query_one("#plan-problems", Static).update(
                f"cannot open this plan in the designer: {self.error}"
            )
            self.query_one("#plan-problems").add_class("-bad")
            for button in self.query(Button):
                button.disabled = True
            return
        self.query_one(StageTable).focus()
        self.revalidate()  # fills the table
        self._select(min(self.locked, len(self.plan.stages) - 1) if self.remaining else 0)
        self.revalidate()

    # ---- validation and redraw -----------------------------------------------
    def revalidate(self) -> None:
        plan = self.plan
        if plan is None:
            return
        fit = fit_budget(plan)
        apply_fit(plan, fit)  # every edit refits the fill stage
        self.query_one(StageForm).show_budget(
            plan.budget is not None,
            fit is not None and fit.fill_index == self.selected,
            fit.fitted_steps if fit is not None else 0,
        )
        self.want_file_check()  # what reads files: in a worker, after a pause in typing
        self.problems = edited_plan_problems(
            plan,
            display_path(self.plan_path),
            model_set=self.model_set,
            file_checks=self.file_checks,
        )
        by_key = designer_status.errors_by_key(self.problems, self.field_errors)
        stage_prefix = f"stages[{self.selected}]."
        self.query_one(StageForm).show_errors(designer_status.scoped_errors(by_key, stage_prefix))
        for form in self.query(SectionForm):
            if form.has_class(BUILDING):
                continue  # its fields are not there yet: shown once it is built
            form.show_errors(designer_status.section_errors(by_key, form.section))
        self.cost, cost_line = estimate(plan)
        self.query_one(StageTable).show_plan(
            plan, self.cost, designer_status.bad_stages(by_key), self._first_editable
        )
        self.query_one(StageTimeline).show_plan(plan)
        self.query_one("#plan-cost", Static).update(
            "\n".join([cost_line, designer_status.memory_line(plan), *budget_lines(plan, fit)])
        )
        self._show_problems(by_key)
        self._show_title()
        self.show_data_line()

    def _show_problems(self, by_key: dict[str, str]) -> None:
        box = self.query_one("#plan-problems", Static)
        box.set_class(bool(by_key), "-bad")
        box.set_class(not by_key, "-good")
        listed = designer_status.listed_problems(self.problems, self.field_errors)
        line = designer_status.problems_line(listed, self.plan, self.remaining)
        if not self.files_fresh():  # the data's problems shown are the last answer's
            line += f"  · {CHECKING}"
        # literal text: a problem may name a table such as [model], which is not markup
        box.update(Content(line))

    def _show_title(self) -> None:
        assert self.plan is not None
        locked = self.locked if self.remaining else None
        title = designer_status.title_line(self.plan, self.plan_path, self.dirty, locked)
        self.query_one("#plan-title", Static).update(title)
        self.query_one("#plan-summary", Static).update(plan_summary(self.plan))
        self.query_one("#plan-path", Static).update(designer_status.path_line(self.plan_path))

    # ---- editing -------------------------------------------------------------
    def _select(self, index: int) -> None:
        assert self.plan is not None
        if not self.plan.stages:
            return
        index = max(0, min(index, len(self.plan.stages) - 1))
        self.selected = index
        table = self.query_one(StageTable)
        if table.row_count > index and table.cursor_row != index:
            table.move_cursor(row=index, animate=False)
        self.query_one(StageForm).load(
            index, self.plan.stages[index], self.remaining and index < self.locked
        )

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "stage-table" and self.plan is not None:
            row = event.data_table.cursor_row  # now, not when the (maybe stale) event was sent
            if row != self.selected or self.query_one(StageForm).index != row:
                self._select(row)
                self.revalidate()

    def on_field_changed(self, message: FieldChanged) -> None:
        plan = self.plan
        if plan is None:
            return
        form = self.query_one(StageForm)
        if message.scope == "stage" and (form.locked or form.index >= len(plan.stages)):
            return
        key, _ = plan_edits.field_target(plan, message.scope, message.key, form.index)
        if message.problem:
            self.field_errors[key] = message.problem
        else:
            self.field_errors.pop(key, None)
            plan_edits.set_field(plan, message.scope, message.key, form.index, message.value)
            self.model_set = self.model_set or message.scope == "model"
        self.dirty = True
        self.revalidate()

    @property
    def _first_editable(self) -> int:
        """Stages before this one have started in the running run and stay as they are."""
        return self.locked if self.remaining else 0

    def _stages_changed(self, select: int) -> None:
        self.field_errors = {
            k: v for k, v in self.field_errors.items() if not k.startswith("stages")
        }
        self.dirty = True
        assert self.plan is not None
        self.query_one(StageTable).show_plan(self.plan, None)  # the row count first
        self._select(select)
        self.revalidate()

    def _apply(self, edit: plan_edits.StageEdit) -> None:
        if edit.warning:
            self.notify(edit.warning, severity="warning")
        if edit.select is None:
            return
        self._stages_changed(edit.select)
        if edit.note:
            self.notify(edit.note, timeout=2)

    def _follow_cursor(self) -> None:
        """Select the table's row now: keys typed ahead (`down`, `x`) run before the
        RowHighlighted message of the move that precedes them."""
        row = self.query_one(StageTable).cursor_row
        if self.plan is not None and row != self.selected and 0 <= row < len(self.plan.stages):
            self._select(row)

    def action_edit_stages(self, kind: str) -> None:
        self._follow_cursor()
        if self.plan is not None:
            edit = plan_edits.STAGE_LIST_EDITS[kind]
            self._apply(edit(self.plan, self.selected, self._first_editable))

    def action_move(self, delta: int) -> None:
        self._follow_cursor()
        if self.plan is not None:
            self._apply(
                plan_edits.move_stage(self.plan, self.selected, delta, self._first_editable)
            )

    # ---- saving and launching (the flow is DesignerSaving's) -----------------
    def _request_launch(self, path: Path, options: LaunchOptions) -> None:
        self.post_message(self.LaunchRequested(path, options))

    def _rename(self, name: str) -> None:
        assert self.plan is not None
        if name != self.plan.name:
            self.plan.name = name
            self.dirty = True
            self.query_one("#form-plan", SectionForm).load(self.plan)
            self.revalidate()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Editing a running run's remaining stages: ctrl+s sends them; nothing to launch or
        save as, so the footer does not offer it. The stage keys act only where the stage
        table is (see `_stage_keys_live`)."""
        if action in STAGE_ACTIONS:
            return self._stage_keys_live()
        if action in ("launch", "save_as", "save"):
            return not self.remaining
        if action == "send":
            return self.remaining
        return True

    def _stage_keys_live(self) -> bool:
        """`a`, `d`, `x`, `[`, `]` edit the stage list: only on the Stages tab, and not while a
        field of the stage form has the focus (a key there is the field's, never a stage
        removed out of sight)."""
        try:
            active = self.query_one(TabbedContent).active
        except NoMatches:  # not composed yet
            return False
        return active == "tab-stages" and not isinstance(self.focused, Input | Select)

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.refresh_bindings()  # the stage keys show only on the Stages tab
        if self.plan is not None and await designer_sections.build_lazy(
            event.pane, self.plan, self.remaining
        ):
            self.revalidate()  # their problems and the corpus line

    def action_send(self) -> None:
        self.action_save()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "launch":
            self.action_launch()
        elif event.button.id in ("save", "send"):
            self.action_save()

    # ---- leaving -------------------------------------------------------------
    def action_tab(self, tab: str) -> None:
        """1–4: a tab, its top focused (the stage table, else the tab bar: Tab goes on into
        the fields), so the next digit picks a tab again instead of landing in a field."""
        self.query_one(TabbedContent).active = tab
        self._focus_top()

    def _focus_top(self) -> None:
        tabs = self.query_one(TabbedContent)
        if tabs.active == "tab-stages":
            self.query_one(StageTable).focus()
        else:
            tabs.query_one(Tabs).focus()

    def action_back(self) -> None:
        if isinstance(self.focused, Input | Select):
            self._focus_top()  # the table on Stages; elsewhere the tab bar (was: a hidden table)
            return
        if not self.dirty or self.plan is None:
            self.dismiss(None)
            return
        what = "the stage edits" if self.remaining else "your changes to this plan"

        def done(yes: bool | None) -> None:
            if yes:
                self.dismiss(None)

        self.app.push_screen(
            ConfirmScreen("Discard unsaved changes?", f"Leaving now drops {what}.", yes="Discard"),
            done,
        )

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Plan designer", DESIGNER_HELP, keys_of(self)))
