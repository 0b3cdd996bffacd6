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

Composed, not inherited: the plan and its file are a `PlanDoc`
(growcockpit/session/plan_doc.py, no Textual), which every edit goes through; the
checks that read files are a `FileChecks` (designer_checks.py), the save, send and
launch flow a `SaveDesk` (designer_save.py); both post what came of them up here.
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
from textual.screen import Screen
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

from growcockpit.plan.show import budget_lines
from growcockpit.plan.types import Plan
from growcockpit.session import plan_edits
from growcockpit.session.plan_doc import PlanDoc
from growcockpit.session.plan_drafts import estimate, plan_summary
from growcockpit.ui.screens import designer_sections, designer_status
from growcockpit.ui.screens.confirm import ConfirmScreen
from growcockpit.ui.screens.designer_checks import CHECKING, FileChecks
from growcockpit.ui.screens.designer_save import SaveDesk
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


class DesignerScreen(Screen[list[dict[str, Any]] | None]):
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
        self.doc = PlanDoc.open(plan_path, draft=draft, locked_stages=locked_stages)
        self.checks = FileChecks(self.doc)
        self.saver = SaveDesk(self.doc, self.checks, runs_root)
        self.cost: Any = None
        self.selected = 0  # the stage row shown in the form

    # ---- building ----------------------------------------------------------
    def compose(self) -> ComposeResult:
        plan, remaining = self.doc.plan, self.doc.remaining
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
                    if plan is None:
                        continue
                    if remaining:  # read-only: built when first shown (`e` opens fast)
                        yield designer_sections.placeholder()
                    else:
                        yield from designer_sections.section_widgets(plan, tab, False)
        yield Static("", id="plan-cost", markup=False)  # under every tab, never scrolled
        yield Static("", id="plan-problems", markup=False)
        with Horizontal(id="plan-actions"):
            if remaining:
                yield Button("Send to run (ctrl+s)", id="send", variant="success")
            else:
                yield Button("Launch (l)", id="launch", variant="success")
                yield Button("Save (ctrl+s)", id="save")
            yield Static("", id="plan-path", markup=False)
        yield Footer(compact=True)
        yield self.checks  # the parts that draw nothing
        yield self.saver

    def on_mount(self) -> None:
        doc = self.doc
        if doc.plan is None:
            self.query_one("#plan-title", Static).update(
                doc.plan_path.name if doc.plan_path else ""
            )
            self.query_one("#plan-problems", Static).update(
                f"cannot open this plan in the designer: {doc.error}"
            )
            self.query_one("#plan-problems").add_class("-bad")
            for button in self.query(Button):
                button.disabled = True
            return
        self.query_one(StageTable).focus()
        self.revalidate()  # fills the table
        self._select(min(doc.locked, len(doc.plan.stages) - 1) if doc.remaining else 0)
        self.revalidate()

    # ---- validation and redraw -----------------------------------------------
    def revalidate(self) -> None:
        plan = self.doc.plan
        if plan is None:
            return
        fit = self.doc.validate(self.checks.problems)  # every edit refits the fill stage
        self.query_one(StageForm).show_budget(
            plan.budget is not None,
            fit is not None and fit.fill_index == self.selected,
            fit.fitted_steps if fit is not None else 0,
        )
        self.checks.want()  # what reads files: in a worker, after a pause in typing
        by_key = designer_status.errors_by_key(self.doc.problems, self.doc.field_errors)
        stage_prefix = f"stages[{self.selected}]."
        self.query_one(StageForm).show_errors(designer_status.scoped_errors(by_key, stage_prefix))
        for form in self.query(SectionForm):
            if form.has_class(BUILDING):
                continue  # its fields are not there yet: shown once it is built
            form.show_errors(designer_status.section_errors(by_key, form.section))
        self.cost, cost_line = estimate(plan)
        self.query_one(StageTable).show_plan(
            plan, self.cost, designer_status.bad_stages(by_key), self.doc.first_editable
        )
        self.query_one(StageTimeline).show_plan(plan)
        self.query_one("#plan-cost", Static).update(
            "\n".join([cost_line, designer_status.memory_line(plan), *budget_lines(plan, fit)])
        )
        self._show_problems(by_key)
        self._show_title()
        self._show_data_line()

    def _show_problems(self, by_key: dict[str, str]) -> None:
        box = self.query_one("#plan-problems", Static)
        box.set_class(bool(by_key), "-bad")
        box.set_class(not by_key, "-good")
        listed = designer_status.listed_problems(self.doc.problems, self.doc.field_errors)
        line = designer_status.problems_line(listed, self.doc.plan, self.doc.remaining)
        if not self.checks.fresh():  # the data's problems shown are the last answer's
            line += f"  · {CHECKING}"
        # literal text: a problem may name a table such as [model], which is not markup
        box.update(Content(line))

    def _show_title(self) -> None:
        doc = self.doc
        assert doc.plan is not None
        locked = doc.locked if doc.remaining else None
        title = designer_status.title_line(doc.plan, doc.plan_path, doc.dirty, locked)
        self.query_one("#plan-title", Static).update(title)
        self.query_one("#plan-summary", Static).update(plan_summary(doc.plan))
        self.query_one("#plan-path", Static).update(designer_status.path_line(doc.plan_path))

    def _show_data_line(self) -> None:
        """The Data tab's corpus line (not there until the stage editor builds the tab)."""
        found = self.query("#data-state")
        if found:
            box = found.first(Static)
            line, stale = self.checks.data_line()
            box.update(line)
            box.set_class(stale, "-stale")

    # ---- what the parts post up ----------------------------------------------
    def on_file_checks_answered(self, _message: FileChecks.Answered) -> None:
        self.revalidate()

    def on_save_desk_renamed(self, message: SaveDesk.Renamed) -> None:
        message.stop()
        assert self.doc.plan is not None
        self.query_one("#form-plan", SectionForm).load(self.doc.plan)
        self.revalidate()

    def on_save_desk_saved(self, message: SaveDesk.Saved) -> None:
        message.stop()
        self._show_title()

    def on_save_desk_stages_ready(self, message: SaveDesk.StagesReady) -> None:
        message.stop()
        self.dismiss(message.stages)

    def on_save_desk_launch_chosen(self, message: SaveDesk.LaunchChosen) -> None:
        message.stop()
        self.post_message(self.LaunchRequested(message.plan_path, message.options))

    # ---- editing -------------------------------------------------------------
    def _select(self, index: int) -> None:
        doc = self.doc
        assert doc.plan is not None
        if not doc.plan.stages:
            return
        index = max(0, min(index, len(doc.plan.stages) - 1))
        self.selected = index
        table = self.query_one(StageTable)
        if table.row_count > index and table.cursor_row != index:
            table.move_cursor(row=index, animate=False)
        self.query_one(StageForm).load(
            index, doc.plan.stages[index], doc.remaining and index < doc.locked
        )

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "stage-table" and self.doc.plan is not None:
            row = event.data_table.cursor_row  # now, not when the (maybe stale) event was sent
            if row != self.selected or self.query_one(StageForm).index != row:
                self._select(row)
                self.revalidate()

    def on_field_changed(self, message: FieldChanged) -> None:
        plan = self.doc.plan
        if plan is None:
            return
        form = self.query_one(StageForm)
        if message.scope == "stage" and (form.locked or form.index >= len(plan.stages)):
            return
        self.doc.set_field(message.scope, message.key, form.index, message.value, message.problem)
        self.revalidate()

    def _apply(self, edit: plan_edits.StageEdit) -> None:
        if edit.warning:
            self.notify(edit.warning, severity="warning")
        if not self.doc.stages_changed(edit):
            return
        assert self.doc.plan is not None and edit.select is not None
        self.query_one(StageTable).show_plan(self.doc.plan, None)  # the row count first
        self._select(edit.select)
        self.revalidate()
        if edit.note:
            self.notify(edit.note, timeout=2)

    def _follow_cursor(self) -> None:
        """Select the table's row now: keys typed ahead (`down`, `x`) run before the
        RowHighlighted message of the move that precedes them."""
        row = self.query_one(StageTable).cursor_row
        plan = self.doc.plan
        if plan is not None and row != self.selected and 0 <= row < len(plan.stages):
            self._select(row)

    def action_edit_stages(self, kind: str) -> None:
        self._follow_cursor()
        if self.doc.plan is not None:
            edit = plan_edits.STAGE_LIST_EDITS[kind]
            self._apply(edit(self.doc.plan, self.selected, self.doc.first_editable))

    def action_move(self, delta: int) -> None:
        self._follow_cursor()
        if self.doc.plan is not None:
            self._apply(
                plan_edits.move_stage(self.doc.plan, self.selected, delta, self.doc.first_editable)
            )

    # ---- saving and launching: the SaveDesk's ------------------------------------
    def action_save(self) -> None:
        self.saver.save()

    def action_send(self) -> None:
        self.saver.save()

    def action_save_as(self) -> None:
        self.saver.save_as()

    def action_launch(self) -> None:
        self.saver.launch()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "launch":
            self.saver.launch()
        elif event.button.id in ("save", "send"):
            self.saver.save()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Editing a running run's remaining stages: ctrl+s sends them; nothing to launch or
        save as, so the footer does not offer it. The stage keys act only where the stage
        table is (see `_stage_keys_live`)."""
        if action in STAGE_ACTIONS:
            return self._stage_keys_live()
        if action in ("launch", "save_as", "save"):
            return not self.doc.remaining
        if action == "send":
            return self.doc.remaining
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
        if self.doc.plan is not None and await designer_sections.build_lazy(
            event.pane, self.doc.plan, self.doc.remaining
        ):
            self.revalidate()  # their problems and the corpus line

    # ---- tabs and leaving ------------------------------------------------------
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
        if not self.doc.dirty or self.doc.plan is None:
            self.dismiss(None)
            return
        what = "the stage edits" if self.doc.remaining else "your changes to this plan"

        def done(yes: bool | None) -> None:
            if yes:
                self.dismiss(None)

        self.app.push_screen(
            ConfirmScreen("Discard unsaved changes?", f"Leaving now drops {what}.", yes="Discard"),
            done,
        )

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Plan designer", DESIGNER_HELP, keys_of(self)))
