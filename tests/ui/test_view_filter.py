"""The `/` filter's matching, without Textual."""

from __future__ import annotations

import pytest

from growcockpit.session.view_filter import FilterError, ViewFilter, filter_problem


def test_empty_filter_shows_everything() -> None:
    f = ViewFilter.parse("   ")
    assert not f.active and f.matches("anything") and f.matches_layer(3)
    assert f.describe(1, 2) == ""


def test_layers_by_index_name_state_and_health() -> None:
    rows = [(0, "frozen", "ok"), (1, "trainable", "starved"), (10, "new", "ok"), (11, "new", "ok")]

    def kept(pattern: str) -> list[int]:
        f = ViewFilter.parse(pattern)
        return [i for i, state, health in rows if f.matches_layer(i, state, health)]

    assert kept("^1$") == [1]
    assert kept("1") == [1, 10, 11]
    assert kept("layer (0|11)$") == [0, 11]
    assert kept("frozen|starved") == [0, 1]
    assert kept("NEW") == []  # smart case: a capital asks for case
    assert kept("new") == [10, 11]


def test_lines_and_smart_case() -> None:
    f = ViewFilter.parse("warn")
    assert f.matches("WARNING: loss spike") and not f.matches("step 3")
    assert ViewFilter.parse("Warn").matches("Warning") and not ViewFilter.parse("Warn").matches(
        "warning"
    )
    assert ViewFilter.parse("a").describe(3, 12) == "/a/ · 3 of 12"


@pytest.mark.parametrize("bad", ["(", "[a-", "*x", "a{2,1}", "x" * 201])
def test_bad_patterns_are_one_line(bad: str) -> None:
    problem = filter_problem(bad)
    assert problem and "\n" not in problem
    with pytest.raises(FilterError):
        ViewFilter.parse(bad)
    assert filter_problem("ok|fine") == ""
