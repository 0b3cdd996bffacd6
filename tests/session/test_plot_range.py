"""The step-range parser of the dashboard's `z`, the cursor's moves and the value under it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from growcockpit.session.plot_range import (
    RangeError,
    move_cursor,
    nearest,
    parse_step_range,
    range_problem,
    range_text,
)

SEPARATORS = st.sampled_from(["-", "–", "..", " to ", " ", " - "])


@given(st.integers(0, 10**9), st.integers(1, 10**9), SEPARATORS)
def test_a_range_reads_back_whatever_the_separator(lo: int, width: int, sep: str) -> None:
    hi = lo + width
    assert parse_step_range(f" {lo}{sep}{hi} ") == (lo, hi)
    assert parse_step_range(range_text((lo, hi))) == (lo, hi)


@given(st.text(max_size=20))
def test_any_text_is_a_range_none_or_a_one_line_problem(text: str) -> None:
    problem = range_problem(text)
    if problem:
        assert "\n" not in problem and "30-40" in problem or "below" in problem
        with pytest.raises(RangeError):
            parse_step_range(text)
    else:
        parsed = parse_step_range(text)
        assert parsed is None or parsed[0] < parsed[1]


@pytest.mark.parametrize("text", ["40-30", "30-30", "abc", "30-", "-5-10", "1.5-3"])
def test_bad_ranges_say_why(text: str) -> None:
    assert range_problem(text)


def test_empty_is_the_whole_run() -> None:
    assert parse_step_range("  ") is None and range_text(None) == ""


def test_cursor_starts_mid_range_moves_by_a_fortieth_and_stays_inside() -> None:
    assert move_cursor(None, (30, 40), 1) == 35
    assert move_cursor(35, (30, 40), 1) == 36
    assert move_cursor(40, (30, 40), 1) == 40
    assert move_cursor(30, (30, 40), -1) == 30
    assert move_cursor(500, (0, 4000), -1) == 400


def test_nearest_point() -> None:
    xs, ys = [1.0, 2.0, 4.0], [10.0, 20.0, 40.0]
    assert nearest(xs, ys, 0.0) == 10.0
    assert nearest(xs, ys, 2.9) == 20.0
    assert nearest(xs, ys, 3.1) == 40.0
    assert nearest(xs, ys, 9.0) == 40.0
    assert nearest([], [], 1.0) is None
