"""The plan designer: edit a plan's stages and sections in place, validated as you type.

Every keystroke updates the screen's own `Plan`, which is re-checked with the
same validator as `growcockpit plan validate` (`plan_problems`); each problem
is shown under its field, its stage row is marked ⚠, and the stage timeline
and the cost estimate follow along. Saving edits the original file with
tomlkit, so the user's comments and layout survive (`save_plan(...,
original_text=...)`).

With `locked_stages=k` the designer edits the not-yet-started stages of a
running run: stages before k are shown but locked, and ctrl+s dismisses the
screen with the remaining stages (as `edit_stages` tables) instead of saving.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Button, DataTable, Footer, Input, Select, Static, TabbedContent, TabPane

from growcockpit.plan import (
    PlanError,
    fit_budget,
    load_plan,
    plan_problems,
    plan_to_dict,
    save_plan,
)
from growcockpit.plan.budget import apply_fit
from growcockpit.plan.show import budget_lines
from growcockpit.plan.types import Plan
from growcockpit.protocol.token_index import data_state
from growcockpit.ui.plan_drafts import (
    display_path,
    estimate,
    is_sample,
    new_plan,
    next_stage,
    path_problem,
    plan_summary,
    unique_name,
)
from growcockpit.ui.screens.confirm import ConfirmScreen
from growcockpit.ui.screens.launch import LaunchOptions, LaunchScreen
from growcockpit.ui.screens.prompt import HelpScreen, PromptScreen, keys_of
from growcockpit.ui.widgets import StageTable
from growcockpit.ui.widgets.plan_form import FieldChanged, SectionForm, StageForm
from growcockpit.ui.widgets.timeline import StageTimeline

_STAGE_KEY = re.compile(r"^stages\[(\d+)\](?:\.(\w+))?")

HELP = """\
Design a growing-transformer schedule: each row of the table is a stage, built by its
`enter` operator (init, stack, coalesce, …) and trained for `steps` with the layers its
`train` policy picks (all, new, none, top:K). Move through the rows with ↑/↓; the
fields under the table edit the highlighted stage. Tab moves between fields, Esc
goes back to the table. Problems show under each field as you type (the same checks
as `growcockpit plan validate`). The timeline draws each stage's depth: trainable,
new and frozen layers in different colours. The cost estimate compares the plan's
compute with training the final model at full depth for as many steps."""


class DesignerScreen(Screen[list[dict[str, Any]] | None]):
    BINDINGS = [
        Binding("a", "add_stage", "Add"),
        Binding("d", "duplicate_stage", "Dup"),
        Binding("x,delete", "remove_stage", "Remove", key_display="x"),
        Binding("left_square_bracket", "move(-1)", "Up", key_display="["),
        Binding("right_square_bracket", "move(1)", "Down", key_display="]"),
        Binding("ctrl+s", "save", "Save", priority=True),
        Binding("S", "save_as", "Save as", key_display="S"),
        Binding("l", "launch", "Launch"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("escape", "back", "Back"),
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
        self.dirty = False
        self.cost: Any = None
        self.selected = 0
        self.field_errors: dict[str, str] = {}
        self.problems: list[PlanError] = []
        self._data_key: tuple[str, str, str] | None = None
        self._load()

    def _load(self) -> None:
        if self.plan_path is None:
            self.plan = self.draft or new_plan(unique_name("my-plan", set()))
            self.dirty = True
            return
        try:
            self.original_text = self.plan_path.read_text(encoding="utf-8")
            self.plan = load_plan(self.plan_path, validate=False)
        except (PlanError, OSError) as exc:
            self.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__

    # ---- building ----------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("", id="plan-title")
        yield Static("", id="plan-summary")
        with TabbedContent(id="designer-tabs", initial="tab-stages"):
            with TabPane("Stages", id="tab-stages"), VerticalScroll(id="stages-scroll"):
                yield StageTable(id="stage-table")
                yield StageForm(id="stage-form")
                yield StageTimeline(id="timeline")
                yield Static("", id="plan-cost")
            plan = self.plan
            with TabPane("Plan & model", id="tab-model"), VerticalScroll():
                if plan is not None:
                    yield SectionForm("plan", plan, id="form-plan", disabled=self.remaining)
                    yield SectionForm("model", plan.model, id="form-model", disabled=self.remaining)
            with TabPane("Data", id="tab-data"), VerticalScroll():
                if plan is not None:
                    yield SectionForm("data", plan.data, id="form-data", disabled=self.remaining)
                    yield Static("", id="data-state")
            with TabPane("Optimizer", id="tab-optim"), VerticalScroll():
                if plan is not None:
                    yield SectionForm("optim", plan.optim, id="form-optim", disabled=self.remaining)
        yield Static("", id="plan-problems")
        with Horizontal(id="plan-actions"):
            if self.remaining:
                yield Button("Send to run (ctrl+s)", id="send", variant="success")
            else:
                yield Button("Launch (l)", id="launch", variant="success")
                yield Button("Save (ctrl+s)", id="save")
            yield Static("", id="plan-path")
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
        self.problems = plan_problems(plan, source=display_path(self.plan_path))
        by_key: dict[str, str] = {}
        for err in self.problems:
            by_key.setdefault(err.key, err.problem)
        by_key.update(self.field_errors)
        i = self.selected
        prefix = f"stages[{i}]."
        self.query_one(StageForm).show_errors(
            {k[len(prefix) :]: v for k, v in by_key.items() if k.startswith(prefix)}
        )
        for form in self.query(SectionForm):
            if form.section == "plan":
                form.show_errors({k: v for k, v in by_key.items() if "." not in k and "[" not in k})
            else:
                p = f"{form.section}."
                form.show_errors({k[len(p) :]: v for k, v in by_key.items() if k.startswith(p)})
        bad = {int(m.group(1)) for k in by_key if (m := _STAGE_KEY.match(k))}
        self.cost, cost_line = estimate(plan)
        self.query_one(StageTable).show_plan(
            plan, self.cost, bad, self.locked if self.remaining else 0
        )
        self.query_one(StageTimeline).show_plan(plan)
        self.query_one("#plan-cost", Static).update(
            "\n".join([cost_line, *budget_lines(plan, fit)])
        )
        self._show_problems(by_key)
        self._show_title()
        self._show_data_state(plan)

    def _show_data_state(self, plan: Plan) -> None:
        """Corpus size, token count and cache state; recomputed only when the data changes."""
        key = (plan.data.source, plan.data.tokenizer, plan.model.family)
        if key != self._data_key:
            self._data_key = key
            self.query_one("#data-state", Static).update(data_state(*key))

    def _show_problems(self, by_key: dict[str, str]) -> None:
        box = self.query_one("#plan-problems", Static)
        n = len(by_key)
        box.set_class(n > 0, "-bad")
        box.set_class(n == 0, "-good")
        if n == 0:
            what = "send the edited stages" if self.remaining else "launch"
            box.update(f"✔ valid: ready to {what}")
            return
        first_key, first = next(iter(by_key.items()))
        where = _where(first_key, self.plan)
        more = f" (+{n - 1} more: see ⚠ rows and fields)" if n > 1 else ""
        box.update(f"⚠ {n} problem{'s' if n > 1 else ''}: {where}: {first}{more}")

    def _show_title(self) -> None:
        assert self.plan is not None
        mark = " ● modified" if self.dirty else ""
        if self.remaining:
            head = f"{self.plan.name}: edit the stages after stage {self.locked} (ctrl+s sends them to the run)"
        else:
            head = self.plan.name
        where = "" if self.remaining else f"  · {display_path(self.plan_path)}"
        self.query_one("#plan-title", Static).update(f"{head}{mark}{where}")
        self.query_one("#plan-summary", Static).update(plan_summary(self.plan))
        path = display_path(self.plan_path)
        if is_sample(self.plan_path):
            path += "  (shipped sample: save makes your copy)"
        self.query_one("#plan-path", Static).update(f"plan file: {path}")

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
        if message.scope == "stage":
            form = self.query_one(StageForm)
            if form.locked or form.index >= len(plan.stages):
                return
            key = f"stages[{form.index}].{message.key}"
            target: Any = plan.stages[form.index]
        elif message.scope == "plan":
            key, target = message.key, plan
        else:
            key, target = f"{message.scope}.{message.key}", getattr(plan, message.scope)
        if message.problem:
            self.field_errors[key] = message.problem
        else:
            self.field_errors.pop(key, None)
            setattr(target, message.key, message.value)
        self.dirty = True
        self.revalidate()

    def _editable(self, index: int) -> bool:
        if self.remaining and index < self.locked:
            self.notify(
                "That stage has already started: only later stages can change.", severity="warning"
            )
            return False
        return True

    def _stages_changed(self, select: int) -> None:
        self.field_errors = {
            k: v for k, v in self.field_errors.items() if not k.startswith("stages")
        }
        self.dirty = True
        assert self.plan is not None
        self.query_one(StageTable).show_plan(self.plan, None)  # the row count first
        self._select(select)
        self.revalidate()

    def action_add_stage(self) -> None:
        if self.plan is None:
            return
        at = max(self.selected, self.locked - 1) if self.remaining else self.selected
        stage = next_stage(self.plan, at) if self.plan.stages else new_plan().stages[0]
        self.plan.stages.insert(at + 1 if self.plan.stages else 0, stage)
        self._stages_changed(at + 1)
        self.notify(f"added stage {at + 2}: {stage.name}", timeout=2)

    def action_duplicate_stage(self) -> None:
        if self.plan is None or not self.plan.stages:
            return
        src = self.plan.stages[self.selected]
        if not self._editable(self.selected + 1):
            return
        dup = copy.deepcopy(src)
        dup.name = unique_name(src.name, {s.name for s in self.plan.stages})
        if dup.enter == "init":
            dup.enter = "continue"
        self.plan.stages.insert(self.selected + 1, dup)
        self._stages_changed(self.selected + 1)

    def action_remove_stage(self) -> None:
        if self.plan is None or not self.plan.stages or not self._editable(self.selected):
            return
        if len(self.plan.stages) == 1:
            self.notify("A plan needs at least one stage.", severity="warning")
            return
        gone = self.plan.stages.pop(self.selected)
        self._stages_changed(min(self.selected, len(self.plan.stages) - 1))
        self.notify(f"removed stage {gone.name}", timeout=2)

    def action_move(self, delta: int) -> None:
        if self.plan is None:
            return
        i, j = self.selected, self.selected + delta
        if not 0 <= j < len(self.plan.stages) or not self._editable(min(i, j)):
            return
        stages = self.plan.stages
        stages[i], stages[j] = stages[j], stages[i]
        self._stages_changed(j)

    # ---- saving and launching --------------------------------------------------
    def action_save(self) -> None:
        if self.plan is None:
            return
        if self.remaining:
            self._send_remaining()
        elif self.plan_path is None or is_sample(self.plan_path):
            self.action_save_as()
        else:
            self._write(self.plan_path)

    def action_save_as(self, then_launch: bool = False) -> None:
        if self.plan is None or self.remaining:
            return
        default = (
            f"{self.plan.name}.toml"
            if self.plan_path is None or is_sample(self.plan_path)
            else display_path(self.plan_path)
        )

        def done(value: str | None) -> None:
            if value:
                self._write(Path(value).expanduser())
                if then_launch and not self.dirty:
                    self._launch_dialog()

        self.app.push_screen(
            PromptScreen(
                "Save the plan as",
                "A .toml file; comments of the original plan are kept.",
                default,
                check=path_problem,
                ok="Save",
            ),
            done,
        )

    def _write(self, path: Path) -> None:
        assert self.plan is not None
        try:
            save_plan(self.plan, path, original_text=self.original_text)
            self.original_text = path.read_text(encoding="utf-8")
        except OSError as exc:
            self.notify(f"cannot save {path}: {exc.strerror or exc}", severity="error")
            return
        self.plan_path = path
        self.dirty = False
        n = len(self.problems) + len(self.field_errors)
        note = f" (a draft with {n} problem{'s' if n > 1 else ''})" if n else ""
        self.notify(f"saved {display_path(path)}{note}", title="Saved", timeout=3)
        self._show_title()

    def _send_remaining(self) -> None:
        assert self.plan is not None
        if self._blocked("send the stages"):
            return
        stages = plan_to_dict(self.plan)["stages"][self.locked :]
        if not stages:
            self.notify(
                "No stages left after the running one: add one with `a`.", severity="warning"
            )
            return
        self.dismiss(stages)

    def _blocked(self, what: str) -> bool:
        n = len(self.problems) + len(self.field_errors)
        if n:
            first: tuple[str, str] = (
                next(iter(self.field_errors.items()))
                if self.field_errors
                else (self.problems[0].key, self.problems[0].problem)
            )
            self.notify(
                f"cannot {what}: {n} problem{'s' if n > 1 else ''}; first: {_where(first[0], self.plan)}: {first[1]}",
                title="Fix the plan first",
                severity="error",
                timeout=8,
            )
            return True
        return False

    def action_launch(self) -> None:
        if self.plan is None or self.remaining or self._blocked("launch"):
            return
        if self.plan_path is None or (self.dirty and is_sample(self.plan_path)):
            self.action_save_as(then_launch=True)
            return
        if self.dirty:
            self._write(self.plan_path)
        self._launch_dialog()

    def _launch_dialog(self) -> None:
        assert self.plan is not None and self.plan_path is not None
        path = self.plan_path
        _cost, line = estimate(self.plan)

        def done(options: LaunchOptions | None) -> None:
            if options is not None:
                self.post_message(self.LaunchRequested(path, options))

        self.app.push_screen(LaunchScreen(self.plan.name, str(self.runs_root), line), done)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "launch":
            self.action_launch()
        elif event.button.id in ("save", "send"):
            self.action_save()

    # ---- leaving -------------------------------------------------------------
    def action_back(self) -> None:
        if isinstance(self.focused, Input | Select):
            self.query_one(StageTable).focus()
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
        self.app.push_screen(HelpScreen("Plan designer", HELP, keys_of(self)))


def _where(key: str, plan: Plan | None) -> str:
    m = _STAGE_KEY.match(key)
    if m and plan is not None:
        i = int(m.group(1))
        name = plan.stages[i].name if i < len(plan.stages) else "?"
        field = f" {m.group(2)}" if m.group(2) else ""
        return f"stage {i + 1} ({name}){field}"
    return key or "plan"
