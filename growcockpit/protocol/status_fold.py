"""status.json as a fold of the event log.

The backend writes what `StatusFold` makes of each event it emits, so the
status file is a function of events.jsonl (plus the liveness fields a log
cannot hold: the process start time and the heartbeat). `status_from_log`
folds a whole log the same way: the contract's test, and the way to rebuild
a status file that was lost or damaged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from growcockpit.protocol.events import (
    AwaitingAdvance,
    Checkpoint,
    Event,
    Paused,
    PlanChanged,
    Resumed,
    RolledBack,
    RunFinished,
    RunStarted,
    StageStarted,
    StartupPhase,
    Step,
)
from growcockpit.protocol.rundir import FINAL_STATES, RunStatus
from growcockpit.protocol.stage_steps import StageSteps


class StatusFold:
    """The run's status after the events seen so far; `apply` says whether to write it now."""

    def __init__(self, status: RunStatus) -> None:
        self.status = status
        self.stage_names: list[str] = []
        self.planned: list[int] = []  # each stage's planned steps (the latest plan)
        self.ran = StageSteps()  # a stage that ended early counts the steps it ran

    def apply(self, event: Event) -> bool:
        """Fold one event. True when the change is worth writing at once; False for a step
        (the writer throttles those) or an event that changes nothing here."""
        handler = _HANDLERS.get(type(event))
        return handler(self, event) if handler is not None else False

    # ---- handlers ------------------------------------------------------------------
    def _plan(self, plan: dict[str, Any]) -> None:
        stages = [s for s in plan.get("stages") or () if isinstance(s, dict)]
        if not stages:
            return
        self.stage_names = [str(s.get("name", "")) for s in stages]
        self.status.num_stages = len(stages)
        self.planned = [_int(s.get("steps")) for s in stages]
        self.status.total_steps = self.ran.total(self.planned)
        if plan.get("name"):
            self.status.plan_name = str(plan["name"])
        if self.status.stage < len(stages):
            self.status.stage_name = self.stage_names[self.status.stage]

    def _run_started(self, ev: RunStarted) -> bool:
        s = self.status
        if ev.run_id:
            s.run_id = ev.run_id
        s.pid, s.started, s.state = ev.pid, ev.t, "starting"
        self._plan(ev.plan)
        return True

    def _stage_started(self, ev: StageStarted) -> bool:
        s = self.status
        s.stage, s.stage_name, s.step = ev.index, ev.name, ev.step
        self.ran.started(ev.index, ev.step)
        if self.planned:
            s.total_steps = self.ran.total(self.planned)
        if s.state in ("starting", "waiting"):
            s.state = "running"
        return True

    def _step(self, ev: Step) -> bool:
        s = self.status
        s.step, s.loss, s.stage = ev.step, ev.loss, ev.stage
        if s.stage < len(self.stage_names):
            s.stage_name = self.stage_names[s.stage]
        if s.state in ("starting", "paused"):  # a step: the loop runs (a tracked loop told
            s.state = "running"  # to stop while paused leaves the pause without a resume)
            return True
        return False

    def _plan_changed(self, ev: PlanChanged) -> bool:
        self._plan(ev.plan)
        return True

    def _rolled_back(self, ev: RolledBack) -> bool:
        s = self.status
        s.step, s.stage = ev.step, ev.stage
        if s.stage < len(self.stage_names):
            s.stage_name = self.stage_names[s.stage]
        self.ran.rolled_back(ev.stage)
        if self.planned:
            s.total_steps = self.ran.total(self.planned)
        if ev.checkpoint:
            s.last_checkpoint = ev.checkpoint
        return True

    def _paused(self, ev: Paused) -> bool:
        return self._state("paused")

    def _resumed(self, ev: Resumed) -> bool:
        return self._state("running") if self.status.state == "paused" else False

    def _waiting(self, ev: AwaitingAdvance) -> bool:
        return self._state("waiting")

    def _checkpoint(self, ev: Checkpoint) -> bool:
        self.status.last_checkpoint = ev.path
        return True

    def _startup(self, ev: StartupPhase) -> bool:
        """The phase under way while a run starts, for the home screen; none once it ended."""
        s = self.status
        if not ev.done:
            s.phase, s.phase_since = ev.phase, ev.t
        elif s.phase == ev.phase:
            s.phase, s.phase_since = "", 0.0
        else:
            return False
        return True

    def _finished(self, ev: RunFinished) -> bool:
        s = self.status
        s.phase, s.phase_since = "", 0.0  # a run that crashed while starting is no longer starting
        self.status.state = ev.status if ev.status in FINAL_STATES else "crashed"
        if ev.step:
            self.status.step = ev.step
        return True

    def _state(self, state: str) -> bool:
        if self.status.state in FINAL_STATES:
            return False
        self.status.state = state
        return True


_HANDLERS: dict[type[Event], Callable[[StatusFold, Any], bool]] = {
    RunStarted: StatusFold._run_started,
    StageStarted: StatusFold._stage_started,
    Step: StatusFold._step,
    PlanChanged: StatusFold._plan_changed,
    RolledBack: StatusFold._rolled_back,
    Paused: StatusFold._paused,
    Resumed: StatusFold._resumed,
    AwaitingAdvance: StatusFold._waiting,
    Checkpoint: StatusFold._checkpoint,
    RunFinished: StatusFold._finished,
    StartupPhase: StatusFold._startup,
}


def status_from_log(events: Iterable[Event], base: RunStatus | None = None) -> RunStatus:
    """The status a run's events imply (liveness fields as in `base`, else empty)."""
    fold = StatusFold(dataclasses.replace(base) if base is not None else RunStatus())
    for event in events:
        fold.apply(event)
    return fold.status


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
