"""The loss curve's smoothing (growcockpit.session.smoothing): W&B's time-weighted, debiased EMA."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from growcockpit.session.smoothing import (
    DEFAULT_FACTOR,
    FACTORS,
    VIEWPORT_SCALE,
    step_factor,
    twema,
)

FACTOR = st.floats(min_value=0.0, max_value=0.999)


@st.composite
def series(draw: st.DrawFn, min_size: int = 1) -> tuple[list[float], list[float]]:
    """Ascending xs (repeats allowed) with finite ys."""
    gaps = draw(st.lists(st.floats(min_value=0.0, max_value=1e4), min_size=min_size, max_size=60))
    start = draw(st.floats(min_value=-1e6, max_value=1e6))
    xs, x = [], start
    for g in gaps:
        x += g
        xs.append(x)
    ys = draw(
        st.lists(st.floats(min_value=-1e3, max_value=1e3), min_size=len(xs), max_size=len(xs))
    )
    return xs, ys


def test_by_hand_two_and_three_points() -> None:
    # factor 0.81: weight 0.9 per thousandth of the x range; range 2 -> dx 1 is 500 thousandths
    w = 0.9**500
    out = twema([0.0, 1.0, 2.0], [1.0, 3.0, 5.0], 0.81)
    assert out[0] == 1.0
    assert out[1] == pytest.approx((1.0 * w + 3.0) / (w + 1.0))
    assert out[2] == pytest.approx((1.0 * w * w + 3.0 * w + 5.0) / (w * w + w + 1.0))


def test_density_aware_same_curve_whatever_the_logging_cadence() -> None:
    """A curve logged every step and the same curve logged every 10th step smooth alike
    at the points they share; a per-point EMA of the same weight smooths the dense one
    10× more, so the two disagree by far more."""
    dense_x = [float(s) for s in range(0, 1001)]
    dense_y = [math.sin(s / 100.0) for s in range(0, 1001)]
    sparse_x, sparse_y = dense_x[::10], dense_y[::10]
    dense, sparse = twema(dense_x, dense_y, 0.9), twema(sparse_x, sparse_y, 0.9)
    gap = max(abs(sparse[i] - dense[10 * i]) for i in range(len(sparse)))
    naive_dense, naive_sparse = plain_ema(dense_y, 0.9), plain_ema(sparse_y, 0.9)
    naive_gap = max(abs(naive_sparse[i] - naive_dense[10 * i]) for i in range(len(sparse)))
    assert gap < 0.05 < 0.5 < naive_gap


def plain_ema(ys: list[float], factor: float) -> list[float]:
    """A debiased per-point EMA of weight sqrt(factor), blind to x."""
    w, total, norm, out = math.sqrt(factor), 0.0, 0.0, []
    for y in ys:
        total, norm = total * w + y, norm * w + 1.0
        out.append(total / norm)
    return out


def test_points_at_one_x_are_averaged_and_singletons_pass() -> None:
    assert twema([5.0, 5.0, 5.0], [1.0, 2.0, 6.0], 0.5) == pytest.approx([1.0, 1.5, 3.0])
    assert twema([1.0], [7.0], 0.9) == [7.0]
    assert twema([], [], 0.9) == []
    with pytest.raises(ValueError, match="2 x values but 1 y"):
        twema([0.0, 1.0], [1.0], 0.5)


def test_an_inf_loss_passes_through_without_poisoning_the_curve() -> None:
    out = twema([0.0, 1.0, 2.0, 3.0], [1.0, math.inf, 1.0, 1.0], 0.9)
    assert out[1] == math.inf
    assert out[0] == out[2] == out[3] == pytest.approx(1.0)


def test_factor_ladder_steps_and_saturates() -> None:
    assert DEFAULT_FACTOR in FACTORS and VIEWPORT_SCALE > 0
    assert step_factor(0.9, +1) == 0.95 and step_factor(0.9, -1) == 0.8
    assert step_factor(FACTORS[-1], +1) == FACTORS[-1]
    assert step_factor(0.0, -1) == 0.0
    assert step_factor(0.65, +1) == 0.7 and step_factor(0.65, -1) == 0.6  # off-ladder values


@settings(max_examples=200, deadline=None)
@given(series(), FACTOR, st.floats(min_value=-1e3, max_value=1e3))
def test_a_constant_series_stays_constant(
    data: tuple[list[float], list[float]], factor: float, c: float
) -> None:
    xs, _ = data
    assert twema(xs, [c] * len(xs), factor) == pytest.approx([c] * len(xs), rel=1e-9, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(series(), FACTOR)
def test_debiasing_makes_the_first_point_exact(
    data: tuple[list[float], list[float]], factor: float
) -> None:
    xs, ys = data
    assert twema(xs, ys, factor)[0] == ys[0]


@settings(max_examples=200, deadline=None)
@given(series())
def test_factor_zero_is_the_raw_series(data: tuple[list[float], list[float]]) -> None:
    xs, ys = data
    assert twema(xs, ys, 0.0) == ys


@example(data=([0.0, 5e-324], [0.0, 0.0]), factor=0.5)  # a denormal span once gave NaN
@settings(max_examples=200, deadline=None)
@given(series(min_size=2), FACTOR)
def test_smoothed_values_stay_within_the_range_seen_so_far(
    data: tuple[list[float], list[float]], factor: float
) -> None:
    xs, ys = data
    for i, v in enumerate(twema(xs, ys, factor)):
        assert min(ys[: i + 1]) - 1e-6 <= v <= max(ys[: i + 1]) + 1e-6


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=1, max_value=40),
    FACTOR,
    FACTOR,
)
def test_monotone_in_the_factor_on_a_step(before: int, after: int, f1: float, f2: float) -> None:
    """On a step from 0 to 1, a larger factor lags more: never above the smaller one's curve."""
    lo, hi = sorted((f1, f2))
    xs = [float(i) for i in range(before + after)]
    ys = [0.0] * before + [1.0] * after
    smooth_lo, smooth_hi = twema(xs, ys, lo), twema(xs, ys, hi)
    for a, b in zip(smooth_lo, smooth_hi, strict=True):
        assert b <= a + 1e-12
    assert smooth_lo[before - 1] == smooth_hi[before - 1] == 0.0
