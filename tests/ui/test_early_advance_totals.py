"""A stage left early with `advance` counts the steps it ran, on every
surface that shows a total (cockpit header and ETA, Home, `status --json`, compare).

The log here is what a backend that does not re-plan on `advance` writes (older runs,
or an advance before the stage's first step): only the next `stage_started` says where
the stage ended. A rollback into the stage makes it count its plan again."""

from __future__ import annotations

from pathlib import Path

from ui_fixtures import PLAN, STAGE_STEPS, T0, write_events

from growcockpit.compare import fold_events
from growcockpit.protocol.events import (
    Event,
    RolledBack,
    RunFinished,
    RunStarted,
    StageStarted,
    Step,
)
from growcockpit.protocol.status_fold import status_from_log
from growcockpit.session.catalog import list_runs
from growcockpit.session.run_state import RunState
from growcockpit.ui.widgets.run_header import header_text

ADVANCED_AT = 11  # `g` pressed at step 11 of stage 1's 40


def early_advance(finished: bool) -> list[Event]:
    evs: list[Event] = [RunStarted(seq=1, t=T0, run_id="r", plan=PLAN)]
    evs.append(StageStarted(seq=2, t=T0, index=0, name="shallow", layers=2, steps=STAGE_STEPS))
    step = 0
    for _ in range(ADVANCED_AT):
        step += 1
        evs.append(Step(seq=len(evs) + 1, t=T0 + step, step=step, stage=0, loss=5.0, step_ms=9.0))
    evs.append(
        StageStarted(
            seq=len(evs) + 1,
            t=T0 + step,
            index=1,
            name="grow-4",
            layers=4,
            operator="stack",
            trainable_layers=[2, 3],
            steps=STAGE_STEPS,
            step=step,
            reason="command",
        )
    )
    for _ in range(STAGE_STEPS if finished else 5):
        step += 1
        evs.append(Step(seq=len(evs) + 1, t=T0 + step, step=step, stage=1, loss=4.0, step_ms=9.0))
    if finished:
        evs.append(RunFinished(seq=len(evs) + 1, t=T0 + step, status="completed", step=step))
    return evs


TOTAL = ADVANCED_AT + STAGE_STEPS  # 51, not the planned 80


def test_cockpit_header_and_eta_count_the_steps_the_stage_ran() -> None:
    state = RunState()
    state.apply_all(early_advance(finished=False))
    assert state.total_steps == TOTAL
    assert f"step {ADVANCED_AT + 5}/{TOTAL}" in header_text(state).plain
    eta = state.eta_run()
    assert eta is not None and state.sec_per_step is not None
    assert eta == (TOTAL - ADVANCED_AT - 5) * state.sec_per_step
    done = RunState()
    done.apply_all(early_advance(finished=True))
    assert f"{TOTAL}/{TOTAL}" in header_text(done).plain


def test_status_json_counts_the_steps_the_stage_ran() -> None:
    assert status_from_log(early_advance(finished=False)).total_steps == TOTAL
    status = status_from_log(early_advance(finished=True))
    assert (status.state, status.step, status.total_steps) == ("completed", TOTAL, TOTAL)


def test_compare_counts_the_steps_the_stage_ran() -> None:
    assert fold_events("r", early_advance(finished=False)).total_steps == TOTAL


def test_home_counts_the_steps_the_stage_ran(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    write_events(run / "events.jsonl", early_advance(finished=True))
    (entry,) = list_runs(tmp_path / "runs")
    assert (entry.step, entry.total_steps) == (TOTAL, TOTAL)


def test_a_rollback_into_the_stage_counts_its_plan_again() -> None:
    evs = early_advance(finished=False)
    evs.append(RolledBack(seq=len(evs) + 1, step=6, stage=0, step_in_stage=6, from_step=16))
    state = RunState()
    state.apply_all(evs)
    assert state.total_steps == 2 * STAGE_STEPS
    assert status_from_log(evs).total_steps == 2 * STAGE_STEPS
    assert fold_events("r", evs).total_steps == 2 * STAGE_STEPS
    # ... and ends early again where the run now says
    evs.append(StageStarted(seq=len(evs) + 1, index=1, name="grow-4", layers=4, step=9))
    state.apply_all(evs[-1:])
    assert state.total_steps == 9 + STAGE_STEPS
    assert status_from_log(evs).total_steps == 9 + STAGE_STEPS
