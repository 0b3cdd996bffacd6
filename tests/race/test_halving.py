"""The race's pure decisions: rungs, cuts, ranking, loss at equal compute, the speedup."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from growcockpit.race.halving import (
    Point,
    Speedup,
    cut,
    first_reach_flops,
    ranked,
    reached,
    rung_computes,
    rung_counts,
    value_at,
)


def test_rung_counts_halve_down_to_keep() -> None:
    assert rung_counts(8, 2, 1) == [8, 4, 2]
    assert rung_counts(9, 3, 1) == [9, 3]
    assert rung_counts(6, 2, 2) == [6, 3]  # 3 // 2 = 1 < keep: the last cut keeps 2
    assert rung_counts(2, 2, 1) == [2]
    assert rung_counts(1, 2, 1) == []  # nothing to race
    with pytest.raises(ValueError):
        rung_counts(4, 1, 1)


def test_rung_computes_end_at_the_top_and_grow_by_eta() -> None:
    assert rung_computes(8, 2, 1, 100.0) == [25.0, 50.0, 100.0]
    assert rung_computes(9, 3, 1, 90.0) == [30.0, 90.0]


@given(st.integers(2, 64), st.integers(2, 4), st.integers(1, 4))
def test_every_rung_cuts_until_keep_are_left(n: int, eta: int, keep: int) -> None:
    counts = rung_counts(n, eta, keep)
    assert all(a > b for a, b in zip(counts, counts[1:], strict=False))
    if counts:
        assert counts[0] == n and max(keep, counts[-1] // eta) <= keep


def test_cut_keeps_the_best_fraction_and_ranks_crashed_runs_last() -> None:
    values = {"a": 3.0, "b": 1.0, "c": math.nan, "d": 2.0, "e": None}
    assert ranked(values) == ["b", "d", "a", "c", "e"]
    assert cut(values, 2, 1) == ["b", "d"]
    assert cut({"x": 1.0, "y": 2.0}, 2, 1) == ["x"]
    assert cut({"x": 1.0, "y": 2.0, "z": 0.5}, 3, 2) == ["z", "x"]


@given(st.dictionaries(st.text(min_size=1, max_size=4), st.floats(0, 10), min_size=2))
def test_ranking_is_a_pure_function_of_the_values(values: dict[str, float]) -> None:
    order = ranked(values)
    assert order == ranked(dict(reversed(list(values.items()))))  # insertion order is no input
    assert [values[k] for k in order] == sorted(values.values())
    assert set(cut(values, 2, 1)) <= set(values)


def test_value_at_interpolates_at_equal_compute() -> None:
    pts = [Point(10.0, 8.0), Point(20.0, 6.0), Point(40.0, 5.0)]
    assert value_at(pts, 15.0) == pytest.approx(7.0)
    assert value_at(pts, 30.0) == pytest.approx(5.5)
    assert value_at(pts, 20.0) == 6.0
    assert value_at(pts, 5.0) == 8.0  # before the first evaluation: the first stands in
    assert value_at(pts, 50.0) is None  # not evaluated that far yet
    assert value_at(pts, 50.0, finished=True) == 5.0  # ...and never will be
    assert value_at([], 1.0) is None
    assert reached(pts, 40.0) and not reached(pts, 40.1)


def test_first_reach_and_the_speedup_count_the_race() -> None:
    winner = [Point(10.0, 8.0), Point(20.0, 6.0)]
    assert first_reach_flops(winner, 7.0) == pytest.approx(15.0)
    assert first_reach_flops(winner, 5.0) is None
    s = Speedup(
        target_loss=7.0, baseline_flops=30.0, winner_flops=15.0, race_flops=60.0,
        winner_race_flops=20.0,
    )  # fmt: skip
    assert s.sooner == pytest.approx(2.0)
    assert s.with_race == pytest.approx(30.0 / (60.0 - 20.0 + 15.0))
    none = Speedup(7.0, 30.0, None, 60.0, 20.0)
    assert none.sooner is None and none.with_race is None
