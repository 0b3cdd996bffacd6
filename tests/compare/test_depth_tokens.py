"""How many tokens the full depth would need (compare/depth_tokens.py): the law recovered from
runs made by it, the crossing where the full depth's lower floor outweighs its fewer tokens,
and every case where the fit must not answer."""

from __future__ import annotations

import pytest

from growcockpit.compare.depth_tokens import (
    DepthFitError,
    DepthPoint,
    crossing_flops,
    fit_depth_law,
    tokens_needed,
)

PER_TOKEN = {4: 4 * 73728.0, 2: 2 * 73728.0, 1: 73728.0}  # 6 · 12 w² per layer at w = 32
FLOORS = {4: 2.0, 2: 2.05, 1: 2.15}
SCALE, BETA = 200.0, 0.3


def runs(budgets: list[float], floors: dict[int, float] = FLOORS) -> list[DepthPoint]:
    """Each depth trained to its end at each compute budget, its final loss from the law."""
    return [
        DepthPoint(k, c / f, c, floors[k] + SCALE * (c / f) ** -BETA)
        for k, f in PER_TOKEN.items()
        for c in budgets
    ]


def crossing() -> float:
    """By hand: the budget where the 4-layer model's lead in floor pays for its fewer tokens."""
    worst = 0.0
    for k in (2, 1):
        gap = PER_TOKEN[4] ** BETA - PER_TOKEN[k] ** BETA
        worst = max(worst, (SCALE * gap / (FLOORS[k] - FLOORS[4])) ** (1 / BETA))
    return worst


def test_the_law_is_recovered_from_runs_it_made() -> None:
    law = fit_depth_law(runs([1e12, 2e12, 4e12]))
    assert law.exponent == pytest.approx(BETA)
    assert law.scale == pytest.approx(SCALE, rel=1e-6)
    assert law.floors == pytest.approx(FLOORS, abs=1e-9)
    assert law.rms < 1e-9
    assert crossing_flops(law, 4, PER_TOKEN) == pytest.approx(crossing(), rel=1e-6)


def test_the_tokens_needed_are_said_when_the_crossing_is_near_the_budgets() -> None:
    c = crossing()
    budgets = [c / 8, c / 4, c / 2]  # the crossing at 2× the largest budget
    text = tokens_needed(runs(budgets), 4, c / 2)
    tokens = c / PER_TOKEN[4]
    assert text.startswith(
        f"the 4-layer model would need ≈ {tokens / 1e6:.3g} M tokens (2.00× this budget)"
    )
    assert "over 9 runs, rms 0.000" in text
    inside = tokens_needed(runs([c / 2, c, 2 * c]), 4, 2 * c)
    assert "depth pays from" in inside and "within this budget" in inside


def test_the_fit_does_not_answer_far_outside_what_was_measured() -> None:
    c = crossing()
    far = tokens_needed(runs([c / 64, c / 32, c / 16]), 4, c / 16)  # the crossing at 16×
    assert far.startswith("depth would pay beyond 4× the largest budget measured: not estimated")
    never = tokens_needed(runs([1e12, 2e12, 4e12], {4: 2.1, 2: 2.05, 1: 2.15}), 4, 4e12)
    assert "no budget makes depth pay" in never


def test_one_or_two_budgets_per_depth_are_refused_in_words() -> None:
    one = runs([1e12])
    assert tokens_needed(one, 4, 1e12) == (
        "tokens needed not estimated: the 4-layer model ran at 1 budget(s); the fit needs "
        "each depth at ≥ 3 budgets, each run to its end"
    )
    with pytest.raises(DepthFitError, match="at least two depths"):
        fit_depth_law([p for p in runs([1e12, 2e12, 4e12]) if p.layers == 4])
    flat = [DepthPoint(p.layers, p.tokens, p.flops, 3.0) for p in runs([1e12, 2e12, 4e12])]
    with pytest.raises(DepthFitError, match="does not fall with tokens"):
        fit_depth_law(flat)
    assert "no 8-layer runs" in tokens_needed(runs([1e12, 2e12, 4e12]), 8, 1e12)
