"""RunState: folding recorded events into what the dashboard shows, with bounded history."""

from __future__ import annotations

import math

from ui_fixtures import PLAN, STAGE_STEPS, T0, loss_at, recorded_events

from growcockpit.plan import load_plan
from growcockpit.protocol import Paused, RunStarted, StageStarted, Step, UnknownEvent, WarningEvent
from growcockpit.resources import sample_plan
from growcockpit.session.run_state import RunState, Series, minmax_downsample


def folded(**kwargs: object) -> RunState:
    state = RunState()
    state.apply_all(recorded_events(**kwargs))  # type: ignore[arg-type]
    return state


def test_finished_run_current_stage_step_status() -> None:
    s = folded()
    assert s.status == "completed"
    assert s.finished and s.display_status() == "completed"
    assert s.plan_name == "mslt-demo"
    assert s.run_id == "mslt-demo-20260101-000000"
    assert (s.stage_index, s.stage_name, s.num_stages) == (1, "grow-4", 2)
    assert s.step == 2 * STAGE_STEPS
    assert s.total_steps == 2 * STAGE_STEPS
    assert s.stage_progress == STAGE_STEPS
    assert s.tokens_per_s == 3500.0
    assert s.last_checkpoint == "checkpoints/step-80"


def test_loss_and_val_series() -> None:
    s = folded()
    assert s.train_loss.xs == list(range(1, 2 * STAGE_STEPS + 1))
    assert s.train_loss.ys[0] == round(loss_at(1), 4)
    assert s.loss == round(loss_at(80), 4)
    assert s.val.xs == [20, 40, 60, 80]
    assert s.val_loss == round(loss_at(80) + 0.1, 4)


def test_layers_before_and_after_the_grow() -> None:
    before = folded(finished=False, upto_step=30)
    assert [(r.id, r.trainable, r.new) for r in before.layer_rows()] == [
        (0, True, False),
        (1, True, False),
    ]
    after = folded()
    assert [(r.id, r.trainable, r.new) for r in after.layer_rows()] == [
        (0, False, False),
        (1, False, False),
        (2, True, True),
        (3, True, True),
    ]
    assert [r.state for r in after.layer_rows()] == ["frozen", "frozen", "new", "new"]
    assert after.layers[2].grad_norm is not None and after.layers[0].grad_norm is None
    assert after.layers[3].weight_norm == round(23.0 + 0.01 * 80, 3)


def test_markers_for_grow_stage_pause_resume() -> None:
    s = folded()
    assert [(m.step, m.kind) for m in s.markers] == [
        (40, "grow"),
        (40, "stage"),
        (55, "pause"),
        (55, "resume"),
    ]


def test_pause_then_resume_status() -> None:
    events = recorded_events(finished=False)
    i = next(i for i, e in enumerate(events) if isinstance(e, Paused))
    s = RunState()
    s.apply_all(events[: i + 1])
    assert s.status == "paused" and s.paused and s.display_status() == "paused"
    s.apply_all(events[i + 1 :])
    assert s.status == "running" and s.display_status() == "live"


def test_event_log_entries() -> None:
    s = folded()
    kinds = [e.kind for e in s.log]
    assert kinds[:2] == ["start", "stage"]
    assert "grow" in kinds and kinds[-1] == "finished"
    grow = next(e for e in s.log if e.kind == "grow")
    assert "2→4" in grow.text and grow.step == 40 and abs(grow.t - 20.2) < 1e-6
    refused = next(e for e in s.log if "refused" in e.text)
    assert "stage 2 is the last stage" in refused.text and refused.severity == "warning"
    assert [e.n for e in s.log] == list(range(len(s.log)))


def test_elapsed_uses_event_timestamps_once_finished() -> None:
    s = folded()
    expected = s.t_finished - T0  # type: ignore[operator]
    assert s.elapsed(now=T0 + 10_000) == expected == s.elapsed()
    live = folded(finished=False, upto_step=10)
    assert live.elapsed(now=T0 + 100) == 100
    live.backend_alive = False  # a dead backend's clock stops at its last event
    assert live.elapsed(now=T0 + 100) == live.t_last - T0  # type: ignore[operator]
    assert live.display_status() == "no backend"


def test_next_stage_and_plan_from_events() -> None:
    s = folded(finished=False, upto_step=10)
    nxt = s.next_stage()
    assert nxt is not None and nxt.name == "grow-4" and nxt.layers == 4 and nxt.enter == "stack"
    assert "stack" in nxt.describe() and "4 layers" in nxt.describe()
    assert folded().next_stage() is None


def test_set_plan_fills_stages_when_events_lack_them() -> None:
    s = RunState()
    s.apply(RunStarted(seq=1, t=T0, plan={}))
    plan = load_plan(sample_plan("cpu-demo"))
    s.set_plan(plan)
    assert s.plan_name == "cpu-demo"
    assert [st.name for st in s.stages] == [st.name for st in plan.stages]
    assert s.total_steps == plan.total_steps
    # the events' own plan wins over a later set_plan
    t = RunState()
    t.apply(RunStarted(seq=1, t=T0, plan=PLAN))
    t.set_plan(load_plan(sample_plan("cpu-demo")))
    assert t.plan_name == "mslt-demo" and t.num_stages == 2


def test_unknown_events_and_replays_are_ignored() -> None:
    s = RunState()
    s.apply(RunStarted(seq=1, t=T0, plan=PLAN))
    s.apply(UnknownEvent(seq=2, t=T0 + 1, raw_type="future_thing", raw={"x": 1}))
    s.apply(Step(seq=3, t=T0 + 2, step=1, loss=5.0))
    s.apply(Step(seq=3, t=T0 + 2, step=1, loss=5.0))  # the same event again
    assert len(s.train_loss) == 1 and s.last_seq == 3 and s.status == "running"


def test_stage_started_shrinking_removes_layers() -> None:
    s = RunState()
    s.apply(StageStarted(seq=1, index=0, layers=4, trainable_layers=[0, 1, 2, 3], operator="init"))
    s.apply(StageStarted(seq=2, index=1, layers=2, trainable_layers=[0, 1], operator="coalesce"))
    assert sorted(s.layers) == [0, 1]


def test_minmax_downsample_keeps_extremes_in_order() -> None:
    xs = list(range(10_000))
    ys = [math.sin(i / 50) for i in xs]
    ys[1234] = 99.0
    ys[8765] = -99.0
    dx, dy = minmax_downsample(xs, ys, 200)
    assert len(dx) <= 200 and len(dx) == len(dy)
    assert max(dy) == 99.0 and min(dy) == -99.0
    assert dx == sorted(dx)
    assert dx[0] == 0 and 9_900 <= dx[-1] <= 9_999
    short_x, short_y = minmax_downsample([1, 2, 3], [3, 2, 1], 200)
    assert (short_x, short_y) == ([1, 2, 3], [3, 2, 1])


def test_series_is_bounded_and_keeps_spikes() -> None:
    s = RunState(series_cap=100)
    s.apply(RunStarted(seq=1, t=T0, plan=PLAN))
    for i in range(1, 10_001):
        loss = 100.0 if i == 4321 else (0.001 if i == 7777 else 5.0 - i / 10_000)
        s.apply(Step(seq=i + 1, t=T0 + i, step=i, loss=loss))
    assert len(s.train_loss) <= 100
    assert max(s.train_loss.ys) == 100.0 and min(s.train_loss.ys) == 0.001
    assert s.train_loss.xs == sorted(s.train_loss.xs)
    assert s.train_loss.xs[-1] >= 9_900
    assert s.step == 10_000 and s.loss == 5.0 - 1.0


def test_series_skips_nan_and_log_is_capped() -> None:
    series = Series(cap=10)
    series.append(1, float("nan"))
    assert len(series) == 0
    s = RunState(log_cap=5)
    for i in range(1, 50):
        s.apply(WarningEvent(seq=i, t=T0 + i, message=f"w{i}"))
    assert len(s.log) == 5 and s.log[-1].text == "w49" and s.log[-1].n == 48


def test_versions_bump_only_plot_version_for_plot_data() -> None:
    s = RunState()
    s.apply(RunStarted(seq=1, t=T0, plan=PLAN))
    v, pv = s.version, s.plot_version
    s.apply(WarningEvent(seq=2, t=T0, message="x"))
    assert s.version > v and s.plot_version == pv
    s.apply(Step(seq=3, t=T0, step=1, loss=1.0))
    assert s.plot_version > pv


def test_a_manual_stage_waiting_for_advance_is_logged_as_a_warning() -> None:
    from growcockpit.protocol import AwaitingAdvance

    s = RunState()
    s.apply(RunStarted(seq=1, t=T0, plan=PLAN))
    s.apply(AwaitingAdvance(seq=2, t=T0 + 3, step=40, stage=0, message="waiting for `advance`"))
    entry = s.log[-1]
    assert (entry.kind, entry.severity, entry.step) == ("waiting", "warning", 40)
    assert "`advance`" in entry.text


def test_the_elapsed_clock_goes_on_after_a_resume() -> None:
    """A resumed run's elapsed time and log stamps count from its first start, not from
    the resume: the clock a user reads is the run's, across processes."""
    from growcockpit.protocol.events import RunFinished

    state = RunState()
    state.apply_all(
        [
            RunStarted(seq=1, t=T0, run_id="r", plan=PLAN),
            StageStarted(seq=2, t=T0, index=0, name="shallow", layers=2, steps=40),
            Step(seq=3, t=T0 + 100, step=10, loss=5.0),
            RunFinished(seq=4, t=T0 + 100, status="stopped", step=10),
            RunStarted(seq=5, t=T0 + 500, run_id="r", plan=PLAN, resumed_from="step-10"),
            Step(seq=6, t=T0 + 510, step=11, loss=4.9),
        ]
    )
    assert state.elapsed(now=T0 + 510) == 510.0
    assert state.log[-1].t == 500.0  # log lines keep the run's clock too
