"""The designer's save, save-as, send and launch flow.

What happens when the user saves (in place, or as a new file for a sample or a
draft), sends the remaining stages to a running run, or launches: the checks
that block it, the prompts it opens, and the file it writes (through the screen's
`PlanDoc`). A `SaveDesk` is a part of the designer that draws nothing; it posts what
came of it up to the screen: `Renamed` (redraw the name's field), `Saved` (redraw the
title), `StagesReady` (dismiss with them), `LaunchChosen` (launch the saved plan).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.message import Message
from textual.widget import Widget

from growcockpit.plan.names import name_problem, suggest_name
from growcockpit.session.plan_doc import PlanDoc
from growcockpit.session.plan_drafts import (
    display_path,
    estimate,
    is_sample,
    path_problem,
    save_as_default,
)
from growcockpit.ui.screens import designer_status
from growcockpit.ui.screens.designer_checks import FileChecks
from growcockpit.ui.screens.launch import LaunchOptions, LaunchScreen
from growcockpit.ui.screens.prompt import PromptScreen


def plan_name_for(path: Path) -> str:
    """The name a plan saved as `path` takes: the file's stem, made a valid run name."""
    stem = path.stem
    return stem if name_problem(stem) is None else suggest_name(stem)


class SaveDesk(Widget):
    """Saving, sending and launching `doc`; `checks` answers for the plan as it is before
    a launch or a send; `runs_root`: where a launch's run directory goes."""

    DEFAULT_CSS = "SaveDesk { display: none; }"

    class Renamed(Message):
        """Saved as a new file, the plan took the file's name."""

    class Saved(Message):
        """The plan was written: its path and unsaved state changed."""

    class StagesReady(Message):
        """The remaining stages to send to the running run."""

        def __init__(self, stages: list[dict[str, Any]]) -> None:
            super().__init__()
            self.stages = stages

    class LaunchChosen(Message):
        """Launch the plan saved at `plan_path` with `options`."""

        def __init__(self, plan_path: Path, options: LaunchOptions) -> None:
            super().__init__()
            self.plan_path = plan_path
            self.options = options

    def __init__(self, doc: PlanDoc, checks: FileChecks, runs_root: Path) -> None:
        super().__init__()
        self.doc = doc
        self.checks = checks
        self.runs_root = runs_root

    def save(self) -> None:
        doc = self.doc
        if doc.plan is None:
            return
        if doc.remaining:
            self._send_remaining()
        elif doc.plan_path is None or is_sample(doc.plan_path):
            self.save_as()
        else:
            self._write(doc.plan_path)

    def save_as(self, then_launch: bool = False) -> None:
        doc = self.doc
        if doc.plan is None or doc.remaining:
            return
        default = save_as_default(doc.plan, doc.plan_path)

        def done(value: str | None) -> None:
            if value:
                path = Path(value).expanduser()
                if doc.rename(plan_name_for(path)):  # a copy is its own plan on Home
                    doc.validate(self.checks.problems)  # the saved note counts its problems
                    self.post_message(self.Renamed())
                self._write(path)
                if then_launch and not doc.dirty:
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
        problem = self.doc.write(path)
        if problem:
            self.notify(problem, severity="error")
            return
        listed = designer_status.listed_problems(self.doc.problems, self.doc.field_errors)
        note = designer_status.saved_note(len(listed))
        self.notify(f"saved {display_path(path)}{note}", title="Saved", timeout=3)
        self.post_message(self.Saved())

    def _send_remaining(self) -> None:
        if self._blocked("send the stages"):
            return
        stages = self.doc.remaining_stages()
        if not stages:
            self.notify(
                "No stages left after the running one: add one with `a`.", severity="warning"
            )
            return
        self.post_message(self.StagesReady(stages))

    def _blocked(self, what: str) -> bool:
        if self.checks.now():  # launch or send: never on a stale answer
            self.doc.validate(self.checks.problems)
        listed = designer_status.listed_problems(self.doc.problems, self.doc.field_errors)
        why = designer_status.blocked_text(what, listed, self.doc.plan)
        if why:  # literal: a problem names tables such as [model] (all toasts are: app.notify)
            self.notify(why, title="Fix the plan first", severity="error", timeout=8)
        return bool(why)

    def launch(self) -> None:
        doc = self.doc
        if doc.plan is None or doc.remaining or self._blocked("launch"):
            return
        if doc.plan_path is None or (doc.dirty and is_sample(doc.plan_path)):
            self.save_as(then_launch=True)
            return
        if doc.dirty:
            self._write(doc.plan_path)
        self._launch_dialog()

    def _launch_dialog(self) -> None:
        doc = self.doc
        assert doc.plan is not None and doc.plan_path is not None
        path = doc.plan_path
        _cost, line = estimate(doc.plan)

        def done(options: LaunchOptions | None) -> None:
            if options is not None:
                self.post_message(self.LaunchChosen(path, options))

        self.app.push_screen(LaunchScreen(doc.plan.name, str(self.runs_root), line), done)
