"""Folds of the events that shape a run: start, stages, plan changes, pause/resume, end."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from growcockpit.plan.operators import changes_model
from growcockpit.plan.show import layer_ranges
from growcockpit.protocol.events import (
    Paused,
    PlanChanged,
    Resumed,
    RunFinished,
    RunStarted,
    StageStarted,
    StartupPhase,
)
from growcockpit.protocol.rundir import FINAL_STATES
from growcockpit.protocol.stage_steps import StageSteps
from growcockpit.protocol.startup_phases import FIRST_PHASE, LAST_PHASE, ended_text
from growcockpit.session.fold import axes
from growcockpit.session.fold.layers import LayerRow
from growcockpit.session.fold.plan import StageInfo, decode_plan, stages_of
from growcockpit.session.fold.plateau import REASON_TEXT
from growcockpit.session.fold.records import StageTiming
from growcockpit.session.fold.rollback import blow_up_hint
from growcockpit.text.wording import counted

if TYPE_CHECKING:
    from growcockpit.session.fold.state import RunData

FINISH_SEVERITY = {"completed": "good", "stopped": "warning", "crashed": "error"}


def on_run_started(state: RunData, ev: RunStarted) -> None:
    state.run_id = ev.run_id or state.run_id
    state.device = ev.device
    state.trainer = ev.trainer
    state.status = "running"
    state.stop_step, state.stop_ignored = None, False  # a resume starts a new process
    if not (ev.resumed_from and state.t_start is not None):  # a resume goes on counting
        state.t_start = ev.t or state.t_start
    state.t_finished = None
    if ev.plan:
        state.plan_dict = dict(ev.plan)
        if ev.plan.get("name"):
            state.plan_name = str(ev.plan["name"])
        plan, problem = decode_plan(ev.plan, "run_started.plan")
        if plan is not None and plan.stages:
            state.stages = stages_of(plan)
        elif problem:
            state.log_line(None, "cockpit", f"cannot read the run's plan: {problem}", "warning")
    where = f" on {ev.device}" if ev.device else ""
    if ev.world_size > 1:
        where += f" ×{ev.world_size}"
    text = f"run started{where}"
    if ev.resumed_from:
        text = f"run resumed from {ev.resumed_from}{where}"
    state.log_line(None, "start", text, "info", ev.t)


def on_plan_changed(state: RunData, ev: PlanChanged) -> None:
    """An accepted `edit_stages`: the stages, total steps, ETA and next stage follow it."""
    plan, problem = decode_plan(ev.plan, "plan_changed.plan")
    if plan is None:
        state.log_line(
            ev.step, "plan", f"plan changed, but cannot read it: {problem}", "warning", ev.t
        )
        return
    state.plan_dict = dict(ev.plan)
    state.plan_edit_steps.append(ev.step)
    started = state.stages[: ev.from_stage]
    state.stages = started + stages_of(plan)[ev.from_stage :]
    first, last = ev.from_stage + 1, len(state.stages)
    what = f"stages {first}..{last} replaced" if last >= first else f"stages from {first} removed"
    state.log_line(
        ev.step,
        "plan",
        f"plan changed: {what}; now {last} stages, {_total_from(state, ev.step)} steps",
        "good",
        ev.t,
    )


def _total_from(state: RunData, step: int) -> int:
    """The run's total as it stands at `step`.

    A rollback's `plan_changed` (the checkpoint's plan) comes before its
    `rolled_back`, at the restored step, behind the run's: the stages the run
    ended after that step (an early grow) are not ended any more, so they count
    their planned steps, as the header will once `rolled_back` is folded.
    """
    runs = state.stage_runs
    if step < state.step:
        runs = StageSteps(dict(runs.starts), dict(runs.ran))
        at = [i for i, start in runs.starts.items() if start <= step]
        runs.rolled_back(max(at, default=0))
    return runs.total([s.steps for s in state.stages])


def on_stage_started(state: RunData, ev: StageStarted) -> None:
    previous = len(state.layers)
    state.stage_runs.started(ev.index, ev.step)
    state.stage_index = ev.index
    state.stage_name = ev.name
    state.stage_steps = ev.steps
    state.stage_advance = ev.advance
    state.stage_start_step = ev.step
    state.step = max(state.step, ev.step)
    trainable = set(ev.trainable_layers)
    grew = changes_model(ev.operator) or ev.layers > previous
    for lid in range(ev.layers):
        row = state.layers.get(lid)
        if row is None:
            row = state.layers[lid] = LayerRow(lid)
        row.trainable = lid in trainable
        if not row.trainable:  # no gradient, no update in this stage: not the last stage's
            row.grad_norm = row.update_ratio = None
        row.new = grew and previous > 0 and lid >= previous
        row.restart_timing()  # the layer's work changed with the stage
    for lid in [k for k in state.layers if k >= ev.layers]:
        del state.layers[lid]  # a shrinking operator (coalesce)
    while len(state.stages) <= ev.index:
        state.stages.append(StageInfo(len(state.stages), "", 0, 0))
    known = state.stages[ev.index]
    state.stages[ev.index] = dataclasses.replace(
        known,
        name=ev.name or known.name,
        layers=ev.layers,
        steps=ev.steps or known.steps,
        enter=ev.operator or known.enter,
        advance=ev.advance,
    )
    state.log_line(
        ev.step,
        "stage",
        f"stage {ev.index + 1} {ev.name}: {ev.operator}, {counted(ev.layers, 'layer')}, "
        f"training {layer_ranges(trainable) or 'none'} ({ev.op_seconds:.2f}s)"
        + (f"; {REASON_TEXT[ev.reason]}" if ev.reason in REASON_TEXT else ""),
        "info",
        ev.t,
    )
    timing = state.stage_timings.setdefault(ev.index, StageTiming(ev.index))
    timing.name, timing.layers, timing.trainable = ev.name, ev.layers, len(trainable)
    state.step_gap = True  # the operator's time is not a step's
    axes.on_stage_started(state, ev)
    if ev.index > 0 or ev.step > 0:
        state.mark(ev.step, "stage", ev.name, ev.t)


def on_paused(state: RunData, ev: Paused) -> None:
    state.status = "paused"
    state.pause_reason = ev.reason
    if ev.reason != "command":  # a pause command's one line is its CommandEvent's
        text = f"paused ({ev.reason}){blow_up_hint(ev.reason)}"
        state.log_line(ev.step, "paused", text, "warning", ev.t)
    state.step_gap = True
    state.mark(ev.step, "pause", "pause", ev.t)


def on_resumed(state: RunData, ev: Resumed) -> None:
    if state.status == "paused":
        state.status = "running"
    state.pause_reason = ""
    # only a resume command resumes: its one log line is its CommandEvent's
    state.step_gap = True
    state.mark(ev.step, "resume", "resume", ev.t)


def on_run_finished(state: RunData, ev: RunFinished) -> None:
    state.status = ev.status if ev.status in FINAL_STATES else "completed"
    state.t_finished = ev.t or state.t_last
    state.step = max(state.step, ev.step)
    state.finish_message = ev.message
    state.starting, state.startup_phase = False, ""  # it may have ended while starting
    text = f"run {state.status} at step {ev.step}"
    if ev.final_path:
        text += f"; final model: {ev.final_path}"
    if ev.message:
        text += f" ({ev.message})"
    state.log_line(ev.step, "finished", text, FINISH_SEVERITY[state.status], ev.t)


def on_startup(state: RunData, ev: StartupPhase) -> None:
    """A start-up phase began or ended; the first step's end logs the whole breakdown."""
    if ev.phase == FIRST_PHASE:  # a new launch (a resume's) starts a new breakdown
        state.startup_summary = ""
    state.starting = ev.phase != LAST_PHASE or not ev.done
    if not ev.done:
        state.startup_phase, state.startup_since = ev.phase, ev.t
        state.changed()
        return
    if state.startup_phase == ev.phase:
        state.startup_phase = ""
    part = ended_text(ev.phase, ev.seconds or 0.0)
    state.startup_summary = f"{state.startup_summary} · {part}" if state.startup_summary else part
    if ev.phase == LAST_PHASE:
        text = f"first step {ev.since_launch:.1f} s after launch: {state.startup_summary}"
        state.log_line(None, "start", text, "info", ev.t)
    state.changed()
