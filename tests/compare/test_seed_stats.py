"""The one-sided paired t-test over seeds: its exact t CDF against published critical
values, and the verdict's words for one, two and three seeds."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from growcockpit.compare.seed_stats import seed_test, t_upper_tail

# one-sided 5 % and 1 % critical values of Student's t (any statistics table)
CRITICAL = [(1, 6.314, 0.05), (2, 2.920, 0.05), (3, 2.353, 0.05), (4, 2.132, 0.05),
            (5, 2.015, 0.05), (10, 1.812, 0.05), (2, 6.965, 0.01), (7, 2.998, 0.01)]  # fmt: skip


@pytest.mark.parametrize(("df", "t", "p"), CRITICAL)
def test_the_exact_t_cdf_matches_the_tables(df: int, t: float, p: float) -> None:
    assert t_upper_tail(t, df) == pytest.approx(p, abs=2e-4)


@given(st.floats(-50, 50), st.integers(1, 30))
def test_the_t_cdf_is_symmetric_and_a_probability(t: float, df: int) -> None:
    up = t_upper_tail(t, df)
    assert 0.0 <= up <= 1.0
    assert up + t_upper_tail(-t, df) == pytest.approx(1.0, abs=1e-12)


def test_the_t_cdf_tends_to_the_normal_for_many_degrees_of_freedom() -> None:
    assert t_upper_tail(1.6449, 400) == pytest.approx(0.05, abs=1e-3)


def test_one_seed_is_not_a_result() -> None:
    test = seed_test([1.8])
    assert test.p is None and not test.significant
    assert test.text == "one seed: not a result"


def test_two_seeds_give_the_spread_but_no_test() -> None:
    test = seed_test([1.5, 1.7])
    assert test.p is None and "too few seeds" in test.text and "median 1.60×" in test.text


def test_three_consistent_seeds_are_significant_and_the_p_value_is_the_t_tests() -> None:
    ratios = [1.5, 1.6, 1.7]
    logs = [math.log(r) for r in ratios]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    t = mean / (sd / math.sqrt(3))
    test = seed_test(ratios)
    assert test.p == pytest.approx(t_upper_tail(t, 2))
    assert test.p is not None and test.p < 0.05 and test.significant
    assert test.text.startswith("3 seeds, median 1.60× (min 1.50×, max 1.70×)")
    assert "ahead" in test.text


def test_noisy_or_behind_seeds_are_not_significant() -> None:
    assert not seed_test([3.0, 0.8, 1.4]).significant  # one seed behind, large spread
    assert not seed_test([0.9, 0.95, 0.97]).significant  # behind on every seed
    assert seed_test([1.2, 0.0, 1.3]).p == 1.0  # a seed that never reached the target
    assert seed_test([1.2, 1.2, 1.2]).p == 0.0  # no spread, ahead
