"""One run's progress as the comparison needs it, folded from its events.

Training time is the sum of the steps' `step_ms` (each step event's mean
over the steps since the previous event, `metrics.log_every_steps`) plus the
operators' `op_seconds`: evaluations, checkpoints and pauses are left out, so a run that
was paused or evaluated often is not penalised. A rollback (or a resume from an older
checkpoint) abandons the steps after the restored one: their time, FLOPs, train losses
and evaluations are dropped and counting goes on from the restored step, as the
cockpit's time and FLOPs axes count. Estimated FLOPs are the plan package's count
(growcockpit/plan/flops.py, the one every surface and the benchmarks use) priced per
stage from what each `stage_started` event says was trained (so a plan edited
while running is priced as it ran), over the tokens each step trained.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from growcockpit.plan import Plan, PlanError, plan_from_dict
from growcockpit.plan.flops import trained_step_cost, unit_flops_per_token
from growcockpit.protocol.eventlog import read_all
from growcockpit.protocol.events import (
    Eval,
    Event,
    PlanChanged,
    RolledBack,
    RunFinished,
    RunStarted,
    StageStarted,
    Step,
)
from growcockpit.protocol.rundir import RunPaths
from growcockpit.protocol.stage_steps import StageSteps


@dataclass(frozen=True)
class EvalPoint:
    """One evaluation: the step, cumulative training seconds and FLOPs, the val loss."""

    step: int
    wall_s: float
    flops: float | None  # None when the run's plan is unknown
    val_loss: float
    tokens: int = 0  # trained so far
    accuracy: float | None = None  # exact-match accuracy, where the task reports one

    def value(self, metric: str) -> float | None:
        """The evaluation's value of `metric` ("val_loss" or "accuracy")."""
        return self.accuracy if metric == "accuracy" else self.val_loss


@dataclass(frozen=True, slots=True)
class TrainPoint:
    """One step event: where the run stood (step, tokens, training seconds, FLOPs) and
    its train loss, for the compare screen's train-loss overlay on any x axis."""

    step: int
    tokens: int
    wall_s: float
    flops: float | None
    loss: float


@dataclass(frozen=True)
class StageMark:
    """Where a later stage began: its first step, training seconds and FLOPs before it."""

    step: int
    wall_s: float
    flops: float | None
    tokens: int = 0


@dataclass
class RunProgress:
    """What a run has done so far (module doc)."""

    name: str
    plan_name: str = ""
    evals: list[EvalPoint] = field(default_factory=list)
    step: int = 0
    total_steps: int | None = None
    wall_s: float = 0.0
    flops: float | None = None
    status: str = "running"  # running | completed | stopped | crashed
    stages: list[StageMark] = field(default_factory=list)  # each later stage's start
    plan_stages: int = 0  # stages in the run's plan (0: no plan in the log)
    train: list[TrainPoint] = field(default_factory=list)  # each step event's train loss
    plan: dict[str, Any] = field(default_factory=dict)  # as launched (for a config diff)
    data_source: dict[str, Any] = field(default_factory=dict)  # run_started's resolved source
    op_seconds: float = 0.0  # the operators' share of `wall_s` (stage entries)
    step_ms: dict[int, list[float]] = field(default_factory=dict)  # per stage, each event's

    @property
    def final_val_loss(self) -> float | None:
        return self.evals[-1].val_loss if self.evals else None


def _stage_cost(plan: Plan, ev: StageStarted) -> float:
    """Step cost (cost units) of the stage `ev` started, as it was entered."""
    drop = plan.stages[ev.index].layer_drop if 0 <= ev.index < len(plan.stages) else 0.0
    return trained_step_cost(
        plan,
        ev.layers,
        ev.trainable_layers,
        width=ev.width,
        embeddings_trainable=ev.embeddings_trainable,
        head_trainable=ev.head_trainable,
        layer_drop=drop,
    )


def stage_flops_per_token(plan: Plan, ev: StageStarted) -> float:
    """Estimated FLOPs per trained token of the stage `ev` started (plan/flops.py): what
    the FLOPs axes of the cockpit price."""
    return _stage_cost(plan, ev) * unit_flops_per_token(plan)


def plan_of(data: Mapping[str, Any] | None) -> Plan | None:
    """The plan an event carries (not validated: it ran), None when it cannot be read."""
    if not data:
        return None
    try:
        return plan_from_dict(dict(data), validate=False)
    except (PlanError, TypeError, ValueError):
        return None


def fold_events(name: str, events: Iterable[Event]) -> RunProgress:
    """Fold a run's events (in log order) into its `RunProgress`."""
    run = RunProgress(name)
    plan: Plan | None = None
    cost = 0.0
    per_token = 0.0
    wall_ms = 0.0
    flops = 0.0
    tokens = 0
    at_step: dict[int, tuple[float, float, int]] = {0: (0.0, 0.0, 0)}
    last_step = 0  # a step event's step_ms is the mean of the steps since the previous one
    ran = StageSteps()  # a stage that ended early (advance) counts the steps it ran
    for ev in events:
        if isinstance(ev, RunStarted | PlanChanged):
            if isinstance(ev, RunStarted):
                run.plan_name = str((ev.plan or {}).get("name", ""))
                run.plan = dict(ev.plan or {})
                run.data_source = dict(ev.data_source or {})
            changed = plan_of(ev.plan)
            if changed is not None or isinstance(ev, RunStarted):
                plan = changed
            if plan is not None:
                per_token = unit_flops_per_token(plan)
        elif isinstance(ev, RolledBack):
            ran.rolled_back(ev.stage)
            last_step = ev.step
            kept = max(s for s in at_step if s <= ev.step)
            wall_s, flops, _ = at_step[kept]
            wall_ms, tokens = 1e3 * wall_s, ev.tokens
            at_step = {s: v for s, v in at_step.items() if s <= ev.step}
            run.train = [p for p in run.train if p.step <= ev.step]  # the abandoned timeline
            run.evals = [p for p in run.evals if p.step <= ev.step]
            run.stages = [
                m
                for m in run.stages
                if m.step < ev.step or (m.step == ev.step and ev.stage_entered)
            ]
            run.step = ev.step
        elif isinstance(ev, StageStarted):
            ran.started(ev.index, ev.step)
            wall_ms += 1e3 * max(0.0, ev.op_seconds)
            run.op_seconds += max(0.0, ev.op_seconds)
            if plan is not None:
                cost = _stage_cost(plan, ev)
            if ev.index > 0:
                mark = StageMark(ev.step, wall_ms / 1e3, flops if plan else None, tokens)
                run.stages.append(mark)
        elif isinstance(ev, Step):
            wall_ms += max(0.0, ev.step_ms) * max(1, ev.step - last_step)  # log_every_steps
            last_step = ev.step
            run.step_ms.setdefault(ev.stage, []).append(ev.step_ms)
            flops += cost * per_token * max(0, ev.tokens - tokens)
            tokens = ev.tokens
            run.step = ev.step
            at_step[ev.step] = (wall_ms / 1e3, flops, tokens)
            if isinstance(ev.loss, int | float) and math.isfinite(ev.loss):
                point = TrainPoint(ev.step, tokens, wall_ms / 1e3, flops if plan else None, ev.loss)
                run.train.append(point)
        elif isinstance(ev, Eval) and ev.step in at_step:
            wall, fl, tok = at_step[ev.step]
            acc = getattr(ev, "accuracy", None)  # set by tasks with exact answers
            acc = float(acc) if isinstance(acc, int | float) and math.isfinite(acc) else None
            run.evals.append(EvalPoint(ev.step, wall, fl if plan else None, ev.val_loss, tok, acc))
        elif isinstance(ev, RunFinished):
            run.status = ev.status
    if plan is not None:
        run.total_steps = ran.total([s.steps for s in plan.stages])
        run.plan_stages = len(plan.stages)
    run.wall_s = wall_ms / 1e3
    run.flops = flops if plan is not None else None
    return run


def load_progress(run_dir: Path) -> RunProgress:
    """`fold_events` over a run directory's event log (OSError if it cannot be read)."""
    root = Path(run_dir)
    return fold_events(root.name, read_all(RunPaths(root).events))
