"""The designer's save, save-as, send and launch flow: the base class of DesignerScreen.

What happens when the user saves (in place, or as a new file for a sample or a
draft), sends the remaining stages to a running run, or launches: the checks
that block it, the prompts it opens, and the file it writes. The screen that
composes and redraws the form (designer.py) inherits it.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import Any

from textual.screen import Screen

from growcockpit.plan import PlanError, plan_to_dict, save_plan
from growcockpit.plan.names import name_problem, suggest_name
from growcockpit.plan.types import Plan
from growcockpit.session.plan_drafts import (
    display_path,
    estimate,
    is_sample,
    path_problem,
    save_as_default,
)
from growcockpit.ui.screens import designer_status
from growcockpit.ui.screens.launch import LaunchOptions, LaunchScreen
from growcockpit.ui.screens.prompt import PromptScreen


def plan_name_for(path: Path) -> str:
    """The name a plan saved as `path` takes: the file's stem, made a valid run name."""
    stem = path.stem
    return stem if name_problem(stem) is None else suggest_name(stem)


class DesignerSaving(Screen[list[dict[str, Any]] | None]):
    """Saving and launching a plan; the state is the designer's (set in its __init__)."""

    plan: Plan | None
    plan_path: Path | None
    original_text: str | None
    model_set: bool
    dirty: bool
    remaining: bool
    locked: int
    runs_root: Path
    problems: list[PlanError]
    field_errors: dict[str, str]

    @abstractmethod
    def _show_title(self) -> None:
        """The screen's: shows the plan's name, path and unsaved state in its title."""

    @abstractmethod
    def _request_launch(self, path: Path, options: LaunchOptions) -> None:
        """The screen's: launches the saved plan at `path` with `options`."""

    @abstractmethod
    def _rename(self, name: str) -> None:
        """Give the plan a new name and show it (the screen redraws its fields)."""

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
        default = save_as_default(self.plan, self.plan_path)

        def done(value: str | None) -> None:
            if value:
                path = Path(value).expanduser()
                self._rename(plan_name_for(path))  # a copy is its own plan on Home, not a twin
                self._write(path)
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
            model = ("model",) if self.model_set else ()
            save_plan(self.plan, path, original_text=self.original_text, sections=model)
            self.original_text = path.read_text(encoding="utf-8")
        except OSError as exc:
            self.notify(f"cannot save {path}: {exc.strerror or exc}", severity="error")
            return
        self.plan_path = path
        self.dirty = False
        listed = designer_status.listed_problems(self.problems, self.field_errors)
        note = designer_status.saved_note(len(listed))
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
        listed = designer_status.listed_problems(self.problems, self.field_errors)
        why = designer_status.blocked_text(what, listed, self.plan)
        if why:  # literal: a problem names tables such as [model] (all toasts are: app.notify)
            self.notify(why, title="Fix the plan first", severity="error", timeout=8)
        return bool(why)

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
                self._request_launch(path, options)

        self.app.push_screen(LaunchScreen(self.plan.name, str(self.runs_root), line), done)
