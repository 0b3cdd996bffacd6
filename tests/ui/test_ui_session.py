"""RunSession without Textual, and the bulk fold it attaches with.

The bulk fold must give the state that folding the events one by one gives,
so a cockpit shows the same run however it attached."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ui_fixtures import recorded_events, write_events, write_long_log, write_recorded_run

from growcockpit.protocol import EventLog, RunPaths, RunStarted, Step, encode_event, read_all
from growcockpit.session.fold.bulk import fold_lines
from growcockpit.session.run_session import RunSession
from growcockpit.session.run_state import RunState

SCALARS = [
    "run_id",
    "plan_name",
    "status",
    "stage_index",
    "stage_name",
    "stage_steps",
    "stage_start_step",
    "step",
    "loss",
    "lr",
    "tokens",
    "tokens_per_s",
    "step_ms",
    "val_loss",
    "t_start",
    "t_last",
    "last_checkpoint",
    "lr_scale",
    "fwd_ms",
    "bwd_ms",
    "opt_ms",
    "data_ms",
    "sec_per_step",
    "last_seq",
    "last_step_t",
    "last_step_seen",
    "step_gap",
]
SERIES = "train_loss val tok_s step_ms_series fwd_series bwd_series opt_series data_series tokens_at train_s_at flops_at"


def _compare(bulk: RunState, one: RunState) -> None:
    for name in SCALARS:
        a, b = getattr(bulk, name), getattr(one, name)
        assert a == b or (isinstance(a, float) and abs(a - b) <= 1e-9 * max(1, abs(b))), name
    for name in SERIES.split():
        a, b = getattr(bulk, name), getattr(one, name)
        assert (a.xs, a.ys) == (b.xs, b.ys), name
    assert (bulk.heat.steps, bulk.heat.stages, bulk.heat.columns) == (
        one.heat.steps,
        one.heat.stages,
        one.heat.columns,
    )
    assert [(m.step, m.kind, m.label) for m in bulk.markers] == [
        (m.step, m.kind, m.label) for m in one.markers
    ]
    assert [(e.kind, e.text) for e in bulk.log] == [(e.kind, e.text) for e in one.log]
    assert [(s.name, s.steps) for s in bulk.stages] == [(s.name, s.steps) for s in one.stages]
    for lid, row in one.layers.items():
        other = bulk.layers[lid]
        assert (other.state, other.grad_norm, list(other.grad_hist)) == (
            row.state,
            row.grad_norm,
            list(row.grad_hist),
        ), lid
    for index, timing in one.stage_timings.items():
        mine = bulk.stage_timings[index]
        assert mine.n == timing.n and abs(mine.step_ms - timing.step_ms) < 1e-6


def test_bulk_fold_equals_folding_one_by_one(tmp_path: Path) -> None:
    path = RunPaths(tmp_path).events
    write_long_log(path, n_events=6_000, layers=8)  # > FULL_LAYER_STATS layer_stats, 4 stages
    lines = [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]
    bulk, one = RunState(series_cap=10**6), RunState(series_cap=10**6)  # nothing compacted
    assert fold_lines(bulk, lines) == (len(lines), 0)
    one.apply_all(read_all(path))
    _compare(bulk, one)
    # compacted series: bucketed once rather than every cap/2 points, same extremes
    small_bulk, small_one = RunState(series_cap=400), RunState(series_cap=400)
    fold_lines(small_bulk, lines)
    small_one.apply_all(read_all(path))
    for name in SERIES.split():
        a, b = getattr(small_bulk, name), getattr(small_one, name)
        assert len(a) <= a.cap, name
        assert (min(a.ys, default=0), max(a.ys, default=0)) == (
            min(b.ys, default=0),
            max(b.ys, default=0),
        ), name


def test_bulk_fold_of_the_recorded_run_in_pieces(tmp_path: Path) -> None:
    """Chunk edges anywhere (mid stage, around pauses) change nothing."""
    events = recorded_events()
    lines = [encode_event(e).encode() for e in events]
    one = RunState()
    one.apply_all(events)
    for cut in (1, 7, 33, 64):
        bulk = RunState()
        for i in range(0, len(lines), cut):
            fold_lines(bulk, lines[i : i + cut])
        _compare(bulk, one)


def test_bulk_fold_skips_bad_lines_and_takes_odd_steps_the_slow_way() -> None:
    good = [
        encode_event(RunStarted(seq=1, t=10.0, run_id="r")).encode(),
        encode_event(Step(seq=2, t=11.0, step=1, loss=3.0)).encode(),
        b"{not json",
        b"[1, 2]",
        json.dumps({"seq": 3, "t": 12.0, "type": "step", "step": "two", "loss": 2.0}).encode(),
        json.dumps({"seq": 4, "t": 13.0, "type": "step", "step": 3, "loss": "NaN"}).encode(),
        encode_event(Step(seq=2, t=11.0, step=1, loss=9.0)).encode(),  # a replayed seq
    ]
    state = RunState()
    folded, skipped = fold_lines(state, good)
    assert skipped == 3  # not JSON, not an object, a step that is not a number
    assert state.last_seq == 4 and state.step == 3
    # the mistyped step is skipped whole (as export skips it), the NaN is not plotted and the
    # replay is ignored
    assert state.train_loss.ys == [3.0]
    assert state.loss != state.loss  # but it is the current loss


def test_session_tails_folds_and_rebuilds_without_textual(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=30)
    session = RunSession(run_dir, read_chunk=50)
    while session.poll() == 50:
        assert not session.caught_up
    assert session.caught_up and session.state.step == 30
    with EventLog(RunPaths(run_dir).events) as log:
        log.append(Step(step=31, loss=1.0))
    session.poll()
    assert session.state.step == 31
    RunPaths(run_dir).events.unlink()  # replaced by a shorter log: start over
    write_events(RunPaths(run_dir).events, recorded_events(finished=False, upto_step=5))
    session.poll()
    assert session.state.step == 5 and session.events_read == len(
        recorded_events(finished=False, upto_step=5)
    )
    session.check_alive()
    assert session.state.backend_alive is None  # no status.json, not launched by us
    session.claim_control()
    assert session.role == "controller" and not session.read_only
    other = RunSession(run_dir)
    other.claim_control()
    assert other.read_only
    session.release()
    other.claim_control()
    assert other.role == "controller"
    other.release()


def test_session_and_folds_import_without_textual() -> None:
    code = (
        "import sys, growcockpit.session.run_session, growcockpit.session.run_state, growcockpit.session.catalog;"
        "print('textual' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_catalog_summarises_a_run_without_status_by_folding_its_tail(tmp_path: Path) -> None:
    from growcockpit.session.catalog import run_entry

    done = tmp_path / "done"
    done.mkdir()
    write_events(RunPaths(done).events, recorded_events())
    entry = run_entry(done)
    assert entry is not None
    assert (entry.status, entry.plan, entry.stage, entry.step, entry.total_steps) == (
        "completed",
        "mslt-demo",
        "2 grow-4",
        80,
        80,
    )
    assert entry.loss is not None
    live = tmp_path / "live"
    live.mkdir()
    write_events(RunPaths(live).events, recorded_events(finished=False, upto_step=30))
    entry = run_entry(live)
    assert entry is not None and entry.status == "unknown" and entry.step == 30


def test_attach_index_resumes_from_where_the_last_session_folded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import growcockpit.session.run_session as session_mod
    from growcockpit.session.attach_index import INDEX_NAME

    monkeypatch.setattr(session_mod, "INDEX_EVERY", 1000)
    run_dir = tmp_path / "run"
    events = RunPaths(run_dir).events
    write_long_log(events, n_events=3_000, layers=8)
    first = RunSession(run_dir, read_chunk=1_000)
    while first.poll() == 1_000:
        pass
    first.poll()  # the round after catching up writes the index
    assert (run_dir / INDEX_NAME).exists()
    with EventLog(events) as log:  # the run goes on after the index was written
        log.append(Step(step=10**6, loss=1.5, t=2e9))
    second = RunSession(run_dir)
    assert second.load_index()
    second.poll()
    assert second.events_read == 3_001
    fresh = RunState()
    fresh.apply_all(read_all(events))
    _compare(second.state, fresh)

    (run_dir / INDEX_NAME).write_text('{"format": 1, "offset": 5, "state": {}}')
    assert not RunSession(run_dir).load_index()  # a damaged index is ignored
    third = RunSession(run_dir)
    third.poll()
    assert third.events_read == 3_001  # folded from the log itself


def test_attach_index_of_another_log_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import growcockpit.session.run_session as session_mod

    monkeypatch.setattr(session_mod, "INDEX_EVERY", 100)
    run_dir = tmp_path / "run"
    events = RunPaths(run_dir).events
    write_long_log(events, n_events=500, layers=4)
    first = RunSession(run_dir)
    first.poll()
    first.release()  # leaving writes the index too
    assert first.load_index()
    text = events.read_text().replace('"name":"long-48"', '"name":"other-48"', 1)
    events.unlink()
    events.write_text(text)  # same length, other content
    assert not RunSession(run_dir).load_index()


def test_attach_index_with_and_without_the_old_loss_ema_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Earlier cockpits kept a fixed-alpha loss EMA in the index (series `ema`, plain
    `ema_value`); nothing draws it now. Their index must still spare a re-fold, and so
    must the index written without it."""
    import growcockpit.session.run_session as session_mod
    from growcockpit.session.attach_index import INDEX_NAME

    monkeypatch.setattr(session_mod, "INDEX_EVERY", 100)
    run_dir = tmp_path / "run"
    events = RunPaths(run_dir).events
    write_long_log(events, n_events=500, layers=4)
    first = RunSession(run_dir)
    first.poll()
    first.release()
    index = run_dir / INDEX_NAME
    body = json.loads(index.read_text())
    assert "ema" not in body["state"]["series"] and "ema_value" not in body["state"]["plain"]
    fresh = RunState()
    fresh.apply_all(read_all(events))
    new = RunSession(run_dir)
    assert new.load_index()
    _compare(new.state, fresh)

    xs, ys = body["state"]["series"]["train_loss"]
    body["state"]["series"]["ema"] = [xs, ys[:1] * len(ys)]  # as an earlier version wrote it
    body["state"]["plain"]["ema_value"] = ys[0]
    index.write_text(json.dumps(body))
    old = RunSession(run_dir)
    assert old.load_index()
    assert old.events_read == new.events_read and not hasattr(old.state, "ema_value")
    _compare(old.state, fresh)
