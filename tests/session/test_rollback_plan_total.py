"""A rollback past an early grow: the Events tab's `plan changed` line says the restored total.

The backend sends a rollback's `plan_changed` (the checkpoint's plan) before its
`rolled_back`. Rolling back from step 176, after stage 1 ended early at step 151,
to step 100 (still in stage 1) restores the 400 + 300 + 300 = 1000-step plan; the
line must say 1000 (it said 751: the early end was still counted) and agree with
the header's total.
"""

from __future__ import annotations

import dataclasses

from growcockpit.plan import Plan, loads_plan, plan_to_dict
from growcockpit.plan.edit import end_stage_early
from growcockpit.protocol.events import (
    Event,
    PlanChanged,
    RolledBack,
    RunStarted,
    StageStarted,
    Step,
)
from growcockpit.session.run_state import RunState

PLAN = """
name = "three"
[model]
family = "gpt2"
hidden_size = 32
num_heads = 2
intermediate_size = 64
max_seq_len = 32
final_layers = 4
[data]
source = "builtin"
tokenizer = "train:300"
[[stages]]
name = "one"
layers = 2
steps = 400
[[stages]]
name = "two"
layers = 4
enter = "stack"
steps = 300
[[stages]]
name = "three"
layers = 4
steps = 300
"""


def _stage(plan: Plan, index: int, step: int) -> StageStarted:
    s = plan.stages[index]
    return StageStarted(
        index=index, name=s.name, layers=s.layers, steps=s.steps, operator=s.enter, step=step
    )


def events() -> tuple[list[Event], list[Event]]:
    """(the run up to step 176 after an early grow at 151, the rollback to step 100)."""
    plan = loads_plan(PLAN, "three.toml")
    early = end_stage_early(plan, 0, 151)
    run: list[Event] = [RunStarted(run_id="r", plan=plan_to_dict(plan), t=1.0), _stage(plan, 0, 0)]
    run += [Step(step=s, loss=3.0, t=1.0 + s) for s in range(1, 152)]
    run.append(PlanChanged(step=151, from_stage=0, plan=plan_to_dict(early), t=160.0))
    run.append(_stage(early, 1, 151))
    run += [Step(step=s, loss=2.5, t=10.0 + s) for s in range(152, 177)]
    back: list[Event] = [
        PlanChanged(step=100, from_stage=0, plan=plan_to_dict(plan), t=200.0),
        RolledBack(step=100, stage=0, step_in_stage=100, from_step=176, t=200.0),
    ]
    return run, back


def _plan_lines(state: RunState) -> list[str]:
    return [line.text for line in state.log if line.text.startswith("plan changed")]


def test_the_plan_changed_line_of_a_rollback_says_the_restored_total() -> None:
    run, back = events()
    state = RunState()
    state.apply_all(run)
    assert state.total_steps == 151 + 300 + 300
    assert _plan_lines(state)[-1].endswith("now 3 stages, 751 steps")
    state.apply_all(back)
    assert state.total_steps == 1000
    assert _plan_lines(state)[-1].endswith("now 3 stages, 1000 steps")


def test_an_edit_without_a_rollback_keeps_the_ended_stages() -> None:
    run, _ = events()
    state = RunState()
    state.apply_all(run)
    plan = loads_plan(PLAN, "three.toml")
    longer = dataclasses.replace(
        plan, stages=[*plan.stages[:2], dataclasses.replace(plan.stages[2], steps=500)]
    )
    state.apply_all([PlanChanged(step=176, from_stage=2, plan=plan_to_dict(longer), t=300.0)])
    assert state.total_steps == 151 + 300 + 500
    assert _plan_lines(state)[-1].endswith(f"now 3 stages, {151 + 300 + 500} steps")


def test_either_order_of_the_two_events_says_the_same() -> None:
    """The backend sends plan_changed first (backend/loop/engine.py `Trainer.rollback`); a
    reader that met them the other way round must agree."""
    run, back = events()
    state = RunState()
    state.apply_all(run + list(reversed(back)))
    assert state.total_steps == 1000
    assert _plan_lines(state)[-1].endswith("now 3 stages, 1000 steps")
