"""How far a short race is trusted: the rank statistics of bench/race_trust.py (against
hand-worked cases and their defining properties), the race's replay on curves, and the
caveat the race prints below the measured safe point (growcockpit/race/trust.py)."""

from __future__ import annotations

import itertools
import math
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from repo_paths import REPO

sys.path.insert(0, str(REPO / "bench"))

from race_trust import race_winner, scale_tables  # noqa: E402
from rank_stats import average_ranks, kendall_tau_b, spearman_rho  # noqa: E402

from growcockpit.race.trust import (  # noqa: E402
    MEASURED,
    SAFE_FRACTION,
    Trust,
    caveat,
    nearest,
    safe_fraction,
)

distinct = st.lists(st.integers(-(10**6), 10**6), min_size=2, max_size=9, unique=True).map(
    lambda xs: [float(x) for x in xs]
)


def test_hand_worked_cases() -> None:
    assert average_ranks([3.0, 1.0, 3.0, 2.0]) == [3.5, 1.0, 3.5, 2.0]
    assert spearman_rho([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman_rho([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # one swapped pair of four: tau = (5 - 1) / 6, rho = 1 - 6·2 / (4·15)
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert spearman_rho([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    # tau-b with a tie: x = 1,2,2,3 and y = 1,2,3,4: 5 concordant, one pair tied in x only
    assert kendall_tau_b([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(5 / math.sqrt(5 * 6))
    assert kendall_tau_b([1, 1, 1], [1, 2, 3]) == 0.0  # no order on one side
    # a value the race could not measure ranks last: two of them tie with each other
    assert kendall_tau_b([None, 1.0, math.nan], [3.0, 1.0, 2.0]) == pytest.approx(2 / math.sqrt(6))


@given(distinct)
def test_an_order_agrees_with_itself_and_opposes_its_reverse(xs: list[float]) -> None:
    assert kendall_tau_b(xs, xs) == pytest.approx(1.0)
    assert spearman_rho(xs, [-x for x in xs]) == pytest.approx(-1.0)


@given(distinct, st.randoms(use_true_random=False))
def test_statistics_are_bounded_symmetric_and_rank_only(xs: list[float], rnd) -> None:  # type: ignore[no-untyped-def]
    ys = xs[:]
    rnd.shuffle(ys)
    for f in (kendall_tau_b, spearman_rho):
        v = f(xs, ys)
        assert -1.0 - 1e-12 <= v <= 1.0 + 1e-12
        assert f(ys, xs) == pytest.approx(v)
        assert f([x * 3 + 7 for x in xs], ys) == pytest.approx(v)  # monotone maps keep it


def test_kendall_counts_pairs_as_defined() -> None:
    xs, ys = [3.0, 1.0, 4.0, 1.5, 5.0, 9.0], [2.0, 7.0, 1.0, 8.0, 2.5, 0.5]
    pairs = list(itertools.combinations(range(len(xs)), 2))
    s = sum((xs[i] - xs[j]) * (ys[i] - ys[j]) > 0 for i, j in pairs) - sum(
        (xs[i] - xs[j]) * (ys[i] - ys[j]) < 0 for i, j in pairs
    )
    assert kendall_tau_b(xs, ys) == pytest.approx(s / len(pairs))


def _curve(*points: tuple[float, float]) -> dict[str, object]:
    return {"completed": True, "points": [list(p) for p in points]}


def test_race_replay_cuts_at_equal_compute() -> None:
    # b leads early, a overtakes late: a race picking early picks b, a late one a
    runs = {
        "a": _curve((10, 5.0), (50, 4.0), (100, 2.0)),
        "b": _curve((10, 4.0), (50, 3.0), (100, 2.5)),
        "c": _curve((10, 6.0), (50, 5.0), (100, 4.5)),
    }
    assert race_winner(runs, 100.0, 0.3) == "b"
    assert race_winner(runs, 100.0, 1.0) == "a"


def test_scaling_keeps_the_recipe_shape() -> None:
    import argparse
    import tomllib

    raw = tomllib.loads((REPO / "sample_plans" / "cpu-gpt2-late.toml").read_text())
    args = argparse.Namespace(scale=0.2, evals=20, eval_batches=2, batch=8, seq=64)
    out = scale_tables(raw, args)
    assert out["budget"]["baseline_steps"] == 80 and out["stages"][0]["steps"] == 188
    assert out["optim"]["warmup_steps"] == 4 and out["optim"]["batch_size"] == 8
    assert out["data"]["seq_len"] == 64 and out["metrics"]["eval_batches"] == 2
    assert raw["budget"]["baseline_steps"] == 400  # the recipe itself untouched


TABLE = (
    Trust("a", 0.05, 5, 0.4, 0.5, 0.6, 0.05),
    Trust("a", 0.1, 5, 0.8, 0.7, 0.8, 0.02),
    Trust("a", 0.25, 5, 1.0, 0.9, 0.9, 0.0),
    Trust("b", 0.05, 5, 1.0, 0.2, 0.3, 0.0),
    Trust("b", 0.1, 5, 1.0, 0.4, 0.5, 0.0),
    Trust("b", 0.25, 5, 1.0, 0.6, 0.7, 0.0),
)


def test_the_safe_point_is_safe_in_every_family() -> None:
    assert safe_fraction(TABLE) == 0.25  # a is safe from 0.1, b only from 0.25
    assert safe_fraction([t for t in TABLE if t.family == "a"]) == 0.1
    assert safe_fraction(TABLE[3:5]) is None  # b below τ 0.6 up to 0.1
    # safe at a fraction but not at a larger one: not safe there either
    dip = [Trust("a", 0.05, 5, 1, 1, 1, 0), Trust("a", 0.1, 5, 0.2, 0.1, 0.1, 0)]
    assert safe_fraction(dip) is None


def test_caveat_below_the_safe_point_only() -> None:
    assert [t.family for t in nearest(TABLE, 0.2)] == ["a", "b"]
    assert nearest(TABLE, 0.2)[0].fraction == 0.1 and nearest(TABLE, 0.01)[0].fraction == 0.05
    line = caveat(0.1, TABLE, 0.25)
    assert line is not None and line.startswith("caveat: --budget-fraction 0.1 below")
    assert "picked the true winner in 90% of 10 measured races" in line
    assert "Kendall τ a 0.70, b 0.40" in line
    assert "(the least measured)" in (caveat(0.01, TABLE, 0.25) or "")
    assert caveat(0.25, TABLE, 0.25) is None and caveat(0.5, TABLE, 0.25) is None
    unsafe = caveat(0.5, TABLE[3:5], safe_fraction(TABLE[3:5]))
    assert unsafe is not None and "no measured fraction up to 0.1 was safe" in unsafe


def test_the_shipped_table_is_the_benchmarks() -> None:
    """The table the race reads is the one bench/race_trust.py wrote (rounded)."""
    import json

    result = json.loads((REPO / "bench" / "results" / "race_trust-cpu-2026-12-01.json").read_text())
    want = {
        (fam, float(f)): r
        for fam, t in result["summary"]["by_family"].items()
        for f, r in t.items()
    }
    assert {(t.family, t.fraction) for t in MEASURED} == set(want)
    for t in MEASURED:
        r = want[(t.family, t.fraction)]
        assert t.races == r["races"] and t.winner_rate == pytest.approx(r["winner_rate"], abs=0.005)
        assert t.kendall == pytest.approx(r["kendall_mean"], abs=0.005)
        assert t.spearman == pytest.approx(r["spearman_mean"], abs=0.005)
    assert SAFE_FRACTION == safe_fraction(MEASURED) == result["summary"]["safe_fraction"]
