"""The race screen's Textual-free half: the leader, complete rungs, the race's status, the
presence lock and the stop file (growcockpit.session.race_view, growcockpit.race.presence)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from growcockpit.race.candidates import SPEC_FILE
from growcockpit.race.presence import (
    clear_stop,
    race_live,
    request_stop,
    stop_requested,
    worker_presence,
)
from growcockpit.race.report import Row
from growcockpit.session.race_view import (
    RaceReadError,
    leader_of,
    list_races,
    load_race_view,
    rungs_done,
    status_of,
)


def row(
    key: str, losses: list[float | None], state: str = "racing", cut_at: int | None = None
) -> Row:
    return Row(key, key.startswith("base"), [], losses, 1.0, 1.0, cut_at, state, None, [])


def test_leader_is_the_best_at_the_furthest_rung_among_those_not_cut() -> None:
    rows = [
        row("a", [3.0, 2.5, None]),
        row("b", [2.9, 2.6, None]),
        row("c", [3.5, None, None], "cut", 0),
        row("d", [2.0, None, None], "cut", 0),  # best at rung 1, but cut: not the leader
    ]
    assert leader_of(rows) == "a"
    assert leader_of([row("a", [None]), row("b", [None])]) is None


def test_leader_before_a_cut_and_once_a_winner_is_known() -> None:
    # rung 1 in progress: b measured there, a not yet: b leads on what is known there
    assert leader_of([row("a", [3.0, None]), row("b", [2.9, 2.7])]) == "b"
    assert leader_of([row("a", [3.0, 1.0]), row("b", [2.9, 2.7], "winner")]) == "b"
    assert leader_of([row("a", [3.0, 1.0], "finished"), row("b", [2.9, 2.7], "cut", 1)]) == "a"


def test_rungs_done_counts_rungs_every_candidate_in_them_reported() -> None:
    rows = [row("a", [3.0, 2.5]), row("b", [2.9, None]), row("c", [3.5, None], "cut", 0)]
    assert rungs_done(rows, 2) == 1  # rung 2: b still training
    rows[1] = row("b", [2.9, 2.4])
    assert rungs_done(rows, 2) == 2  # c was cut at rung 1: not needed at rung 2
    assert rungs_done([row("a", [None, None])], 2) == 0


@pytest.mark.parametrize(
    ("live", "stop", "states", "want"),
    [
        (True, False, ["racing", "racing"], "live"),
        (True, True, ["racing", "racing"], "stopping"),
        (False, True, ["racing", "racing"], "stopped"),
        (False, False, ["winner", "cut"], "picked"),
        (False, False, ["finished", "cut"], "finished"),
        (False, False, ["racing", "racing"], "unfinished"),
    ],
)
def test_status(live: bool, stop: bool, states: list[str], want: str) -> None:
    rows = [row(str(i), [1.0], s) for i, s in enumerate(states)]
    assert status_of(live, stop, rows, finish=True) == want


def _hold(
    path: str, ready: multiprocessing.synchronize.Event, done: multiprocessing.synchronize.Event
) -> None:
    with worker_presence(Path(path)):
        ready.set()
        done.wait(60)


def test_presence_is_seen_from_another_process_and_goes_with_it(tmp_path: Path) -> None:
    assert not race_live(tmp_path)  # no lock file yet
    ctx = multiprocessing.get_context("spawn")
    ready, done = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold, args=(str(tmp_path), ready, done))
    proc.start()
    try:
        assert ready.wait(60)
        assert race_live(tmp_path)
        assert race_live(tmp_path)  # looking does not take the lock away
    finally:
        done.set()
        proc.join(60)
    assert not race_live(tmp_path)
    with worker_presence(tmp_path):  # a worker in this process is seen too
        seen = ctx.Process(target=_assert_live, args=(str(tmp_path),))
        seen.start()
        seen.join(60)
        assert seen.exitcode == 0


def _assert_live(path: str) -> None:
    if not race_live(Path(path)):
        raise SystemExit(1)


def test_stop_file_round_trip(tmp_path: Path) -> None:
    assert not stop_requested(tmp_path)
    request_stop(tmp_path)
    assert stop_requested(tmp_path)
    clear_stop(tmp_path)
    clear_stop(tmp_path)  # twice is fine
    assert not stop_requested(tmp_path)


def test_the_study_file_name_is_the_races() -> None:
    from growcockpit.race import study
    from growcockpit.session import race_view

    assert race_view.STUDY_FILE == study.STUDY_FILE


def test_unreadable_race_is_one_line_and_listed_as_such(tmp_path: Path) -> None:
    bad = tmp_path / "broken"
    bad.mkdir()
    (bad / SPEC_FILE).write_text("{not json")
    with pytest.raises(RaceReadError, match="broken: not a readable race"):
        load_race_view(bad)
    (tmp_path / "not-a-race").mkdir()
    (entry,) = list_races(tmp_path)
    assert entry.status == "unreadable" and "not a readable race" in entry.problem
    assert list_races(tmp_path / "missing") == []


def test_one_value_alone_leads_nothing() -> None:
    """The ★ once marked the only candidate with a value, before any comparison."""
    assert leader_of([row("a", [3.0, None]), row("b", [None, None])]) is None
    assert leader_of([row("a", [3.0, 2.0]), row("b", [2.9, None])]) == "b"  # rung 1: a alone


def test_a_stopped_race_says_so_for_its_candidates(tmp_path: Path) -> None:
    """After `s`, every candidate still said "racing"."""
    from growcockpit.race import build_race
    from growcockpit.race.candidates import SPEC_FILE
    from growcockpit.race.presence import request_stop
    from growcockpit.session.race_view import load_race_view

    plan = Path(__file__).with_name("tiny-race.toml")
    spec = build_race([plan], [], [0], tmp_path, budget_fraction=0.5)
    (tmp_path / SPEC_FILE).write_text(spec.to_json())
    assert {c.state for c in load_race_view(tmp_path, curves=False).candidates} == {"racing"}
    request_stop(tmp_path)
    view = load_race_view(tmp_path, curves=False)
    assert view.status == "stopped" and {c.state for c in view.candidates} == {"stopped"}
