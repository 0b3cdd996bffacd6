"""status.json as a fold of the event log (protocol.status_fold): state by state."""

from __future__ import annotations

from growcockpit.protocol import RunStatus
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
    Step,
    System,
)
from growcockpit.protocol.status_fold import StatusFold, status_from_log

PLAN = {"name": "p", "stages": [{"name": "a", "steps": 3}, {"name": "b", "steps": 4}]}


def step(n: int, stage: int = 0, loss: float = 5.0) -> Step:
    return Step(step=n, stage=stage, loss=loss)


def run(*events: Event) -> RunStatus:
    return status_from_log([RunStarted(run_id="r", plan=PLAN, pid=42, t=100.0), *events])


def test_a_started_run_names_its_plan_and_size() -> None:
    s = run()
    assert (s.run_id, s.plan_name, s.pid, s.started) == ("r", "p", 42, 100.0)
    assert (s.state, s.num_stages, s.total_steps) == ("starting", 2, 7)


def test_steps_and_stages_move_the_position() -> None:
    s = run(StageStarted(index=0, name="a"), step(1), step(2, loss=4.5))
    assert (s.state, s.stage, s.stage_name, s.step, s.loss) == ("running", 0, "a", 2, 4.5)
    s = run(StageStarted(index=0, name="a"), step(3), StageStarted(index=1, name="b", step=3))
    assert (s.stage, s.stage_name, s.step) == (1, "b", 3)


def test_pause_resume_and_waiting_for_advance() -> None:
    assert run(StageStarted(index=0, name="a"), Paused(step=1)).state == "paused"
    assert run(StageStarted(index=0, name="a"), Paused(step=1), Resumed(step=1)).state == "running"
    waiting = run(StageStarted(index=0, name="a"), step(3), AwaitingAdvance(step=3))
    assert waiting.state == "waiting"
    advanced = run(StageStarted(index=0, name="a"), AwaitingAdvance(step=3), StageStarted(index=1))
    assert advanced.state == "running"
    # a stage entered while paused (advance, then resume later) stays paused
    assert run(Paused(step=3), StageStarted(index=1, step=3)).state == "paused"


def test_checkpoints_plan_edits_and_rollbacks() -> None:
    s = run(StageStarted(index=0, name="a"), Checkpoint(step=2, path="ck/step-2"))
    assert s.last_checkpoint == "ck/step-2"
    edited = {"name": "p", "stages": [{"name": "a", "steps": 3}, {"name": "c", "steps": 10}]}
    s = run(StageStarted(index=0, name="a"), PlanChanged(step=2, plan=edited))
    assert (s.total_steps, s.num_stages) == (13, 2)
    s = run(StageStarted(index=1, name="b", step=3), step(5, stage=1), RolledBack(step=1, stage=0))
    assert (s.step, s.stage, s.stage_name) == (1, 0, "a")


def test_the_ending_is_final() -> None:
    s = run(StageStarted(index=0, name="a"), step(7), RunFinished(status="completed", step=7))
    assert (s.state, s.step) == ("completed", 7)
    s = run(RunFinished(status="crashed", step=0), Paused(step=0), Resumed(step=0))
    assert s.state == "crashed"
    # a resumed run starts again after its earlier ending
    s = run(RunFinished(status="stopped", step=4), RunStarted(pid=43, plan=PLAN, t=200.0))
    assert (s.state, s.pid, s.step) == ("starting", 43, 4)


def test_only_changes_of_state_ask_for_a_write_now() -> None:
    fold = StatusFold(RunStatus())
    assert fold.apply(RunStarted(plan=PLAN))
    assert fold.apply(step(1))  # the first step: starting -> running
    assert not fold.apply(step(2))
    assert not fold.apply(System())
    assert fold.apply(Paused(step=2))
    assert fold.apply(Resumed(step=2))


def test_the_start_up_phase_under_way_until_the_first_step() -> None:
    from growcockpit.protocol.events import StartupPhase

    def phase(name: str, t: float, done: bool = False) -> StartupPhase:
        return StartupPhase(phase=name, done=done, seconds=1.0 if done else None, t=t)

    s = run(phase("imports", 101.0, done=True), phase("token_cache", 102.0))
    assert (s.phase, s.phase_since) == ("token_cache", 102.0)
    s = run(phase("token_cache", 102.0), phase("token_cache", 104.0, done=True))
    assert (s.phase, s.phase_since) == ("", 0.0)
    s = run(phase("first_step", 105.0), step(1), phase("first_step", 106.0, done=True))
    assert s.phase == "" and s.step == 1
    crashed = run(phase("checkpoint", 103.0), RunFinished(status="crashed"))
    assert (crashed.phase, crashed.state) == ("", "crashed")
