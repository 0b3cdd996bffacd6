"""What a control command asks of a running trainer: a refusal, or an intent.

`decide` is pure: it reads where the run stands (`Progress`) and returns either
a `Refusal` with a reason the user can act on, or a small intent that the
engine applies in one place (`Trainer.apply`) at a step boundary. Refusals
change nothing. Intents whose outcome is only known once applied (a
checkpoint that turns out not finite, a rollback with no usable checkpoint)
are refused by the engine when they fail.
"""

from __future__ import annotations

from dataclasses import dataclass

from growcockpit.backend.control.progress import Progress
from growcockpit.plan import PlanError, parse_stages, replace_remaining_stages
from growcockpit.plan.types import Plan
from growcockpit.protocol.commands import (
    CommandRequest,
    ended_first,
    lr_factor_problem,
    lr_scale_problem,
)
from growcockpit.text.safe_text import quoted
from growcockpit.text.wording import counted


@dataclass(frozen=True)
class Refusal:
    reason: str


@dataclass(frozen=True)
class Pause:
    pass


@dataclass(frozen=True)
class Resume:
    pass


@dataclass(frozen=True)
class Advance:
    message: str


@dataclass(frozen=True)
class TakeCheckpoint:
    pass


@dataclass(frozen=True)
class Rollback:
    step: int | None
    lr_scale: float | None = None  # train on at this LR scale instead of the checkpoint's


@dataclass(frozen=True)
class Stop:
    pass


@dataclass(frozen=True)
class ScaleLr:
    factor: float


@dataclass(frozen=True)
class ReplaceStages:
    plan: Plan
    from_stage: int  # index of the first replaced stage
    count: int


Intent = Pause | Resume | Advance | TakeCheckpoint | Rollback | Stop | ScaleLr | ReplaceStages


def decide(request: CommandRequest, run: Progress) -> Intent | Refusal:
    """The intent `request` stands for at this point of the run, or why it is refused."""
    cmd = request.command
    if run.stopping:
        return Refusal(ended_first(cmd))
    rule = _RULES.get(cmd)
    if rule is None:
        return Refusal(f"unknown command {quoted(cmd)}")
    return rule(request, run)


def _pause(request: CommandRequest, run: Progress) -> Intent | Refusal:
    return Refusal("already paused") if run.state == "paused" else Pause()


def _resume(request: CommandRequest, run: Progress) -> Intent | Refusal:
    return Resume() if run.state == "paused" else Refusal("not paused")


def _advance(request: CommandRequest, run: Progress) -> Intent | Refusal:
    index, stages = run.stage_index, run.plan.stages
    if index + 1 >= len(stages):
        return Refusal(f"already at the last stage ({index + 1}/{len(stages)}); use stop to end")
    nxt = stages[index + 1]
    to = counted(nxt.layers, "layer")
    return Advance(f"entering stage {index + 2} ({nxt.name}: {nxt.enter} to {to})")


def _rollback(request: CommandRequest, run: Progress) -> Intent | Refusal:
    step, scale = request.args.get("step"), request.args.get("lr_scale")
    return Rollback(
        step if isinstance(step, int) else None,
        float(scale) if isinstance(scale, int | float) and not isinstance(scale, bool) else None,
    )


def _set_lr(request: CommandRequest, run: Progress) -> Intent | Refusal:
    factor = request.args.get("factor")
    problem = lr_factor_problem(factor)
    if problem:
        return Refusal(problem)
    assert isinstance(factor, str | int | float)  # what lr_factor_problem accepts
    problem = lr_scale_problem(run.lr_scale, float(factor))
    return Refusal(problem) if problem else ScaleLr(float(factor))


def _edit_stages(request: CommandRequest, run: Progress) -> Intent | Refusal:
    started = run.stage_index + 1
    try:
        stages = parse_stages(request.args["stages"], source="edit_stages", start_index=started)
        plan = replace_remaining_stages(run.plan, started, stages)
    except PlanError as exc:
        return Refusal(str(exc))
    return ReplaceStages(plan, started, len(stages))


_RULES = {
    "pause": _pause,
    "resume": _resume,
    "advance": _advance,
    "checkpoint": lambda request, run: TakeCheckpoint(),
    "rollback": _rollback,
    "stop": lambda request, run: Stop(),
    "set_lr": _set_lr,
    "edit_stages": _edit_stages,
}
