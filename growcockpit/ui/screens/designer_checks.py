"""The designer's checks that read files, as one answer computed off the UI thread.

Typing `../byo/own.jsnl` into `data.source` made `.` and `..` directories for a keystroke
each, and validating them walked the parent tree (a virtual environment included) between
two keystrokes: 8 s for one `.` on a loaded machine. The plan's pure rules stay instant;
what reads files (`check_environment`: the data source, the tokenizer, init_from; and the
Data tab's corpus line) runs here, in a worker, after a pause in typing (`DEBOUNCE_S`), on
a copy of the plan. The screen keeps showing the last answer, marked as being re-checked,
until the new one arrives: a `FileChecks` (a part of the designer that draws nothing)
keeps it and posts each new one up (`Answered`), and the screen revalidates.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from growcockpit.plan.data_source import SourceProblem, resolve_source
from growcockpit.plan.environment import Problem, check_environment
from growcockpit.plan.task_source import is_task_source, task_vocab_size
from growcockpit.plan.types import Plan
from growcockpit.protocol.token_index import data_state
from growcockpit.session.plan_doc import PlanDoc

DEBOUNCE_S = 0.4  # a pause in typing this long starts a check
CHECKING = "checking the data…"


@dataclass(frozen=True)
class FileAnswer:
    """What the file checks said of the plan whose `check_key` is `key`."""

    key: str
    problems: tuple[Problem, ...]
    data_line: str


def check_key(plan: Plan) -> str:
    """What the file checks read: [data] and [model] (init_from is checked against the
    model's sizes); any other edit keeps the last answer fresh."""
    return repr((plan.data, plan.model))


def check_files(plan: Plan) -> FileAnswer:
    """Runs in a worker thread, on a plan no one else edits (the screen passes a copy). An
    unexpected failure is an answer too (one line under data.source), never a dead worker
    that leaves the screen checking for ever."""
    key = check_key(plan)
    try:
        return FileAnswer(key, tuple(check_environment(plan)), data_line(plan))
    except Exception as exc:  # noqa: BLE001 - any failure of a check is shown, in one line
        problem = f"could not be checked ({type(exc).__name__}: {str(exc)[:120]})"
        return FileAnswer(key, (("data.source", problem),), "")


def data_line(plan: Plan) -> str:
    """The Data tab's corpus line. A directory's size is its data files' (the bounded walk
    `resolve_source` does), not everything under it: `..` once read "1,608.8 MB of text",
    a virtual environment counted."""
    d = plan.data
    if is_task_source(d.source):  # generated from the plan's seed: no file, no tokenizer
        return (
            f"{d.source}: generated from the plan's seed as it trains; nothing to read or "
            f"tokenize (fixed vocabulary of {task_vocab_size(d)})"
        )
    size: int | None = None
    if Path(d.source).expanduser().is_dir():
        try:
            found = resolve_source(d.source)
        except SourceProblem:
            return "the corpus' size is known once data.source can be read (see its problem)"
        size = sum(_size(f) for f in (*found.files, *found.val_files))
    return data_state(d.source, d.tokenizer, plan.model.family, size)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


class FileChecks(Widget):
    """Schedules the file checks of `doc`'s plan and keeps their last answer.

    One writer: `_files` is set only here, from a finished worker (or `now`). The screen
    calls `want` after each edit and hands `problems` to the validator."""

    DEFAULT_CSS = "FileChecks { display: none; }"

    class Answered(Message):
        """A new answer is in: the screen revalidates and redraws."""

    def __init__(self, doc: PlanDoc) -> None:
        super().__init__()
        self.doc = doc
        self._files: FileAnswer | None = None
        self._wanted: str | None = None  # the key a scheduled or running check is for
        self._timer: Timer | None = None

    def problems(self, _plan: Plan) -> list[Problem]:
        """The last answer's problems (for `edited_plan_problems`); none before the first."""
        return list(self._files.problems) if self._files is not None else []

    def fresh(self) -> bool:
        """Whether the last answer is for the plan as it is now."""
        plan = self.doc.plan
        return plan is not None and self._files is not None and self._files.key == check_key(plan)

    def want(self) -> None:
        """After an edit: check once typing pauses (at once when nothing was checked yet)."""
        if self.doc.plan is None or self.fresh():
            return
        key = check_key(self.doc.plan)
        if key == self._wanted:
            return
        self._wanted = key
        if self._timer is not None:
            self._timer.stop()
        if self._files is None:
            self._start()
        else:
            self._timer = self.set_timer(DEBOUNCE_S, self._start)

    def _start(self) -> None:
        self._timer = None
        if self.doc.plan is not None:
            work = partial(check_files, copy.deepcopy(self.doc.plan))
            self.run_worker(work, thread=True, group="file-check", exclusive=True)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group != "file-check" or event.state != WorkerState.SUCCESS:
            return
        answer = worker.result
        if isinstance(answer, FileAnswer):
            self._files = answer
            if self._wanted == answer.key:
                self._wanted = None
            self.post_message(self.Answered())

    def now(self) -> bool:
        """Before a launch or a send: the answer for the plan as it is now (a wait the user
        asked for, on a walk with a ceiling), so a bad source never launches unchecked.
        Whether it checked anew (the caller then validates again)."""
        if self.doc.plan is None or self.fresh():
            return False
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.workers.cancel_group(self, "file-check")
        self._files = check_files(copy.deepcopy(self.doc.plan))
        self._wanted = None
        self.post_message(self.Answered())
        return True

    def data_line(self) -> tuple[str, bool]:
        """The Data tab's corpus line: the last answer, marked while a new one is on its
        way; and whether it is stale."""
        fresh = self.fresh()
        last = self._files.data_line if self._files is not None else ""
        return (last if fresh else f"{CHECKING} {last}".rstrip()), not fresh
