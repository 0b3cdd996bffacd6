"""What each control command does to a running trainer, at a step boundary.

Every command is acked: accepted, or refused with a reason the user can act
on. Refusals change nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from growcockpit.plan import (
    PlanError,
    dump_plan,
    parse_stages,
    plan_to_dict,
    replace_remaining_stages,
)
from growcockpit.protocol.commands import (
    CommandAck,
    CommandRequest,
    lr_factor_problem,
    lr_scale_problem,
)
from growcockpit.protocol.events import PlanChanged

if TYPE_CHECKING:
    from growcockpit.backend.engine import Trainer


def apply_command(trainer: Trainer, request: CommandRequest) -> CommandAck:
    step = trainer.pos.step

    def ok(reason: str = "") -> CommandAck:
        return CommandAck(request.id, True, reason, step)

    def refuse(reason: str) -> CommandAck:
        return CommandAck(request.id, False, reason, step)

    cmd = request.command
    if trainer.stopping:
        return refuse("the run is stopping")
    if cmd == "pause":
        if trainer.paused:
            return refuse("already paused")
        trainer.paused = True
        trainer.report.paused(trainer, reason="command")
        return ok(f"paused at step {step}")
    if cmd == "resume":
        if not trainer.paused:
            return refuse("not paused")
        trainer.paused = False
        trainer.report.resumed(trainer)
        return ok(f"resumed at step {step}")
    if cmd == "advance":
        index = trainer.pos.stage_index
        if index + 1 >= len(trainer.plan.stages):
            return refuse(
                f"already at the last stage ({index + 1}/{len(trainer.plan.stages)}); use stop to end"
            )
        nxt = trainer.plan.stages[index + 1]
        trainer.advance_now = True
        return ok(f"entering stage {index + 2} ({nxt.name}: {nxt.enter} to {nxt.layers} layers)")
    if cmd == "checkpoint":
        path = trainer.checkpoint("command")
        if path is None:
            return refuse("the state is not finite: no checkpoint written; use rollback")
        return ok(f"checkpoint written: {path}")
    if cmd == "rollback":
        from growcockpit.backend.restore import RestoreError, rollback

        try:
            return ok(rollback(trainer, request.args.get("step")))
        except RestoreError as exc:
            return refuse(str(exc))
    if cmd == "stop":
        trainer.stopping = True
        return ok("stopping: checkpoint, then end")
    if cmd == "set_lr":
        factor = request.args.get("factor")
        problem = lr_factor_problem(factor) or lr_scale_problem(
            trainer.pos.lr_scale,
            float(factor),  # type: ignore[arg-type]
        )
        if problem:
            return refuse(problem)
        trainer.pos.lr_scale *= float(factor)  # type: ignore[arg-type]
        return ok(f"LR scale now {trainer.pos.lr_scale:g} (lr {trainer.current_lr():.3g})")
    if cmd == "edit_stages":
        started = trainer.pos.stage_index + 1
        try:
            new_stages = parse_stages(
                request.args["stages"], source="edit_stages", start_index=started
            )
            plan = replace_remaining_stages(trainer.plan, started, new_stages)
        except PlanError as exc:
            return refuse(str(exc))
        trainer.plan = plan
        if trainer.dist.is_main:
            trainer.report.paths.plan.write_text(dump_plan(plan))
        trainer.report.emit(PlanChanged(step=step, from_stage=started, plan=plan_to_dict(plan)))
        return ok(f"stages {started + 1}..{len(plan.stages)} replaced ({len(new_stages)} stage(s))")
    return refuse(f"unknown command {cmd!r}")
