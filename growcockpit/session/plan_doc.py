"""The plan the designer edits and the file it came from: one writer of the edit state.

Plain Python, no Textual: the designer screen (growcockpit/ui/screens/designer.py)
draws a `PlanDoc` and hands it each edit; its save flow asks it to write. Every edit
goes through a method here (a field, the stage list, a rename, a save), so `dirty`,
`field_errors` and `problems` change in one place. Validation is the same as
`growcockpit plan validate`'s (`edited_plan_problems`), with the last answer of the
environment checks, which the screen runs in a worker (they read files).

With `locked_stages=k` the document is a running run's remaining stages: stages
before k have started and never change (`first_editable`), and what is sent back is
the stages from k on (`remaining_stages`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from growcockpit.plan import PlanError, fit_budget, load_plan, plan_to_dict, save_plan
from growcockpit.plan.budget import FittedBudget, apply_fit
from growcockpit.plan.load import Environment, edited_plan_problems, model_written
from growcockpit.plan.types import Plan
from growcockpit.session.plan_drafts import display_path, new_plan, unique_name
from growcockpit.session.plan_edits import StageEdit, field_target, set_field


@dataclass
class PlanDoc:
    """`plan` is None when the file could not be opened (`error` says why)."""

    plan: Plan | None
    plan_path: Path | None
    original_text: str | None = None  # the file as read or last saved: its comments stay
    error: str = ""
    model_set: bool = True  # False while the file has no [model] and none of its keys was set
    dirty: bool = False
    locked: int = 0
    remaining: bool = False  # editing a running run's remaining stages
    field_errors: dict[str, str] = field(default_factory=dict)  # what a field could not take
    problems: list[PlanError] = field(default_factory=list)  # the validator's, last run

    @classmethod
    def open(
        cls, plan_path: Path | None, *, draft: Plan | None = None, locked_stages: int | None = None
    ) -> PlanDoc:
        """The plan at `plan_path`; without one, `draft` or a new plan. A fresh plan is not
        "modified" until edited; a generated draft ("grow this") is work the user would
        lose by leaving."""
        locked, remaining = locked_stages or 0, locked_stages is not None
        if plan_path is None:
            plan = draft or new_plan(unique_name("my-plan", set()))
            return cls(plan, None, dirty=draft is not None, locked=locked, remaining=remaining)
        path = Path(plan_path)
        doc = cls(None, path, locked=locked, remaining=remaining)
        try:
            doc.original_text = path.read_text(encoding="utf-8")
            doc.plan = load_plan(path, validate=False)
            doc.model_set = model_written(doc.original_text)
        except (PlanError, OSError) as exc:
            doc.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return doc

    @property
    def first_editable(self) -> int:
        """Stages before this one have started in the running run and stay as they are."""
        return self.locked if self.remaining else 0

    def validate(self, environment: Environment) -> FittedBudget | None:
        """Refit the budget's fill stage (every edit does), then run the validator with
        `environment`, the last answer of the environment checks; returns the fit."""
        plan = self.plan
        if plan is None:
            return None
        fit = fit_budget(plan)
        apply_fit(plan, fit)
        self.problems = edited_plan_problems(
            plan, display_path(self.plan_path), model_set=self.model_set, file_checks=environment
        )
        return fit

    def set_field(self, scope: str, key: str, stage: int, value: Any, problem: str) -> None:
        """A form field's edit: its value set on the plan, or `problem` kept under its key."""
        assert self.plan is not None
        where, _ = field_target(self.plan, scope, key, stage)
        if problem:
            self.field_errors[where] = problem
        else:
            self.field_errors.pop(where, None)
            set_field(self.plan, scope, key, stage, value)
            self.model_set = self.model_set or scope == "model"
        self.dirty = True

    def stages_changed(self, edit: StageEdit) -> bool:
        """After a stage-list edit (plan_edits.py): whether it changed the list. A stage's
        field problems go with the rows they were under."""
        if edit.select is None:
            return False
        self.field_errors = {
            k: v for k, v in self.field_errors.items() if not k.startswith("stages")
        }
        self.dirty = True
        return True

    def rename(self, name: str) -> bool:
        """Give the plan a new name; whether it changed."""
        assert self.plan is not None
        if name == self.plan.name:
            return False
        self.plan.name = name
        self.dirty = True
        return True

    def write(self, path: Path) -> str:
        """Save the plan as `path`, keeping the original's comments and layout (tomlkit);
        returns why it could not, else ""."""
        assert self.plan is not None
        try:
            model = ("model",) if self.model_set else ()
            save_plan(self.plan, path, original_text=self.original_text, sections=model)
            self.original_text = path.read_text(encoding="utf-8")
        except OSError as exc:
            return f"cannot save {path}: {exc.strerror or exc}"
        self.plan_path = path
        self.dirty = False
        return ""

    def remaining_stages(self) -> list[dict[str, Any]]:
        """The stages a running run is sent (`edit_stages`): those from `locked` on."""
        assert self.plan is not None
        stages: list[dict[str, Any]] = plan_to_dict(self.plan)["stages"][self.locked :]
        return stages
