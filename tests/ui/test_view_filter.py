"""The `/` filter's matching, without Textual: layers, lines and plot series."""

from __future__ import annotations

import pytest
from ui_fixtures import recorded_events

from growcockpit.session.plot_view import Curves, PlotView, loss_curves, series_curve
from growcockpit.session.run_state import RunState
from growcockpit.session.view_filter import (
    FilterError,
    ViewFilter,
    filter_problem,
    layer_verdicts,
    shown_layers,
)


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


def _recorded() -> RunState:
    state = RunState()
    state.apply_all(recorded_events())
    return state


def test_plot_series_follow_the_filter_by_name() -> None:
    state = _recorded()

    def loss(pattern: str) -> Curves:
        return loss_curves(state, PlotView(only=ViewFilter.parse(pattern)), 400)

    everything = loss("")
    assert set(everything.curves) == {"train", "val"} and not everything.left_out
    both = loss("loss")
    assert set(both.curves) == {"train", "val"} and both.filter_text(ViewFilter.parse("loss"))
    assert both.curves["val"].ys == everything.curves["val"].ys
    only_val = loss("val")
    assert set(only_val.curves) == {"val"} and only_val.left_out == ("train/loss",)
    assert only_val.filter_text(ViewFilter.parse("val")) == "/val/ · 1 of 2"
    none = loss("^(1|3)$")
    assert not none.curves and none.series == ()
    assert "no series matches /^(1|3)$/" in none.empty_text(ViewFilter.parse("^(1|3)$"))
    tok = series_curve(state, state.tok_s, "tokens/s", PlotView(only=ViewFilter.parse("tok")), 400)
    assert set(tok.curves) == {"tokens/s"}
    gone = series_curve(state, state.tok_s, "tokens/s", PlotView(only=ViewFilter.parse("val")), 400)
    assert not gone.curves and gone.left_out == ("tokens/s",)


def test_a_matched_series_without_points_says_so_not_that_nothing_matched() -> None:
    state = RunState()
    state.apply_all(recorded_events(finished=False, upto_step=3))  # before the first eval
    only = ViewFilter.parse("val")
    shown = loss_curves(state, PlotView(only=only), 400)
    assert not shown.curves and shown.series == ("val/loss",)
    assert shown.empty_text(only) == "no points yet in val/loss"
    assert shown.empty_text(ViewFilter()) == "waiting for the first step"


def test_heatmap_layers_as_the_table_keeps_them_and_all_for_the_series_name() -> None:
    state = _recorded()  # layers 0 and 1 frozen, 2 and 3 new

    def kept(pattern: str) -> list[int]:
        return shown_layers(state, ViewFilter.parse(pattern), 4, "grad norm")

    assert kept("") == [0, 1, 2, 3]
    assert kept("^(1|3)$") == [1, 3]
    assert kept("frozen") == [0, 1]
    assert kept("grad") == [0, 1, 2, 3]  # the plot's own name keeps every row
    assert kept("val") == []
    assert layer_verdicts(state) == {0: "ok", 1: "ok", 2: "ok", 3: "ok"}
