"""A live rollback in the cockpit: the `rolled_back` fold, the bulk fold of it, and the `b` key.

The recorded run is rolled back at step 70 (stage 2, after a grow, a pause and
an LR change) to the checkpoint of step 30 (stage 1), then trains steps 31-35
again with other losses. The cockpit must show what a run that never went
past step 30 shows: the abandoned timeline's points and markers are gone.
"""

from __future__ import annotations

from pathlib import Path

from test_ui_session import _compare
from ui_fixtures import notes, recorded_events, screen_text, settle, wait_for, write_events

from growcockpit.protocol import CommandEvent, RunPaths, Step, encode_event, read_all
from growcockpit.protocol.events import Event, LayerStat, LayerStats, RolledBack
from growcockpit.session.fold.bulk import fold_lines
from growcockpit.session.run_state import RunState
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import PromptScreen
from growcockpit.ui.screens.command_text import rollback_step_problem

BACK_TO, REACHED = 30, 70
SIZE = (160, 48)


def _new_timeline(t: float) -> list[Event]:
    out: list[Event] = []
    for step in range(BACK_TO + 1, BACK_TO + 6):
        t += 0.5
        out.append(Step(t=t, step=step, stage=0, loss=5.0 - 0.01 * step, lr=5e-4, step_ms=400.0))
        if step % 5 == 0:
            stat = LayerStat(id=0, trainable=True, grad_norm=0.7)
            out.append(LayerStats(t=t, step=step, stage=0, layers=[stat]))
    return out


def _runs() -> tuple[list[Event], list[Event]]:
    """(the rolled-back run's log, the log of a run that never went past step 30)."""
    upto = recorded_events(finished=False, upto_step=REACHED)
    cut = next(i for i, ev in enumerate(upto) if isinstance(ev, Step) and ev.step == BACK_TO + 1)
    kept, last_t = upto[:cut], upto[-1].t
    lr = CommandEvent(t=last_t, id="l", command="set_lr", args={"factor": 0.5}, step=REACHED)
    back = RolledBack(
        t=last_t + 1,
        step=BACK_TO,
        stage=0,
        step_in_stage=BACK_TO,
        lr_scale=1.0,
        tokens=2048 * BACK_TO,
        checkpoint="runs/r/checkpoints/step-30",
        from_step=REACHED,
        set_aside=2,
    )
    return upto + [lr, back] + _new_timeline(last_t + 1), kept + _new_timeline(last_t + 1)


def _folded(events: list[Event]) -> RunState:
    state = RunState()
    state.apply_all(events)
    return state


def test_rollback_cuts_the_abandoned_timeline() -> None:
    rolled, never = _runs()
    before = _folded(rolled[: next(i for i, e in enumerate(rolled) if isinstance(e, RolledBack))])
    assert before.lr_scale == 0.5 and before.stage_index == 1 and before.step == REACHED
    state, clean = _folded(rolled), _folded(never)
    for name in ("train_loss", "val", "tok_s", "step_ms_series"):
        mine, want = getattr(state, name), getattr(clean, name)
        assert (mine.xs, mine.ys) == (want.xs, want.ys), name
        assert mine.xs == sorted(set(mine.xs)), f"{name}: steps only go forward"
    assert state.loss == clean.loss
    assert state.val_loss == clean.val_loss == state.val.ys[-1]
    assert state.heat.steps == [5, 10, 15, 20, 25, 30, 35]
    assert [(m.step, m.kind, m.label) for m in state.markers] == [(30, "rollback", "↶30")]
    assert state.lr_scale == 1.0, "the checkpoint's LR scale, not the abandoned ×0.5"
    assert (state.step, state.stage_index, state.stage_name, state.stage_steps) == (
        35,
        0,
        "shallow",
        40,
    )
    assert state.stage_start_step == 0 and state.stage_progress == 35
    assert sorted(state.stage_timings) == [0]
    assert state.last_checkpoint == "runs/r/checkpoints/step-30"
    line = next(e for e in state.log if e.kind == "rollback")
    assert line.text == (
        "rolled back to step-30 from step 70 (stage 1, LR scale ×1); "
        "2 later checkpoint(s) set aside"
    )
    kept = [e for e in state.log if e.kind == "command" and (e.step or 0) > BACK_TO]
    assert kept, "the log keeps what happened (the abandoned timeline's commands, a pause too)"


def test_bulk_fold_of_a_rollback_equals_folding_one_by_one(tmp_path: Path) -> None:
    rolled, _ = _runs()
    path = RunPaths(tmp_path).events
    write_events(path, rolled)
    lines = [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]
    one = RunState()
    one.apply_all(read_all(path))
    for cut in (len(lines), 1, 7, 64):  # one batch, and chunk edges anywhere around the cut
        bulk = RunState()
        for i in range(0, len(lines), cut):
            fold_lines(bulk, lines[i : i + cut])
        _compare(bulk, one)
        assert bulk.lr_scale == 1.0 and bulk.train_loss.xs[-1] == BACK_TO + 5


def test_a_reader_without_the_fold_still_reads_the_event() -> None:
    back = RolledBack(seq=9, step=BACK_TO, lr_scale=0.25, checkpoint="c/step-30", set_aside=1)
    from growcockpit.protocol.event_codec import decode_event

    assert decode_event(encode_event(back)) == back
    old = decode_event('{"seq": 9, "t": 1.0, "type": "rolled_back", "step": 3, "new": 1}')
    assert isinstance(old, RolledBack) and old.step == 3 and old.lr_scale == 1.0


def test_rollback_prompt_check() -> None:
    assert rollback_step_problem("") == rollback_step_problem("200") == ""
    for bad in ("-1", "2.5", "step-3", "abc", "1" * 30):
        assert "checkpoint's step" in rollback_step_problem(bad), bad


async def test_b_asks_then_sends_rollback_with_or_without_a_step(tmp_path: Path) -> None:
    from ui_fixtures import FakeBackend, write_recorded_run

    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=60)
    with FakeBackend(run_dir) as backend:
        app = GrowCockpitApp(run_dir=run_dir)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("b")
            await pilot.pause()
            assert isinstance(app.screen, PromptScreen)
            text = screen_text(app)
            assert "Roll back to a checkpoint?" in text and "the latest is step-40" in text
            await pilot.press("escape")  # cancelled: nothing is sent
            await pilot.pause()
            assert not isinstance(app.screen, PromptScreen) and backend.requests == []
            await pilot.press("b")
            await pilot.pause()
            await pilot.press(*"x1")
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, PromptScreen), "not a step: stays, says why"
            app.screen.query_one("Input").value = "40"
            await pilot.press("enter")
            await wait_for(pilot, lambda: backend.requests)
            await wait_for(pilot, lambda: any("rollback accepted" in m for m in notes(app)))
            await pilot.press("b")
            await pilot.pause()
            await pilot.press("enter")  # empty: the latest checkpoint
            await wait_for(pilot, lambda: len(backend.requests) == 2)
            assert backend.requests == [("rollback", {"step": 40}), ("rollback", {})]


def test_a_resume_cuts_only_when_the_log_went_further() -> None:
    logged = recorded_events(finished=False, upto_step=BACK_TO)
    at_end = RolledBack(t=logged[-1].t, step=BACK_TO, stage=0, step_in_stage=BACK_TO)
    state = _folded([*logged, at_end])
    assert list(state.markers) == [] and not [e for e in state.log if e.kind == "rollback"]
    assert state.train_loss.xs[-1] == BACK_TO
    earlier = RolledBack(t=logged[-1].t, step=20, stage=0, step_in_stage=20, checkpoint="c/step-20")
    state = _folded([*logged, earlier])
    assert state.train_loss.xs[-1] == 20 and state.step == 20
    assert [m.kind for m in state.markers] == ["rollback"]
    line = next(e for e in state.log if e.kind == "rollback")
    assert line.text.startswith("resumed from step-20: the steps logged after it are dropped")


def test_the_prompt_says_stage_edits_after_the_checkpoint_are_undone() -> None:
    """A rollback brings the checkpoint's plan back: edits made after it once came back
    undone without a word (636 steps for the 586 set)."""
    from repo_paths import TINY_TOML

    from growcockpit.plan import loads_plan, plan_to_dict
    from growcockpit.protocol.events import Checkpoint, PlanChanged, RunStarted
    from growcockpit.ui.screens.command_text import rollback_body

    plan = plan_to_dict(loads_plan(TINY_TOML.read_text()))
    state = _folded(
        [
            RunStarted(t=1.0, run_id="r", plan=plan),
            Checkpoint(t=2.0, step=30, path="runs/r/checkpoints/step-30", reason="every"),
            PlanChanged(t=3.0, step=40, from_stage=1, plan=plan),
        ]
    )
    assert state.plan_edit_steps == [40]
    body = rollback_body(45, state.last_checkpoint, state.plan_edit_steps)
    assert "stage edits at step 40 are undone" in body
    assert "undone" not in rollback_body(45, "runs/r/checkpoints/step-40", [30])
    state.apply_all([RolledBack(t=4.0, step=30, stage=0, step_in_stage=30, from_step=45)])
    assert state.plan_edit_steps == []
