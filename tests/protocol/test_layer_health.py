"""Layer health as pure logic (protocol/layer_health.py): the verdicts the layers table shows."""

from __future__ import annotations

from growcockpit.protocol.layer_health import (
    MOVED,
    OK,
    STARVED,
    HealthThresholds,
    LayerSample,
    health,
    starved,
)

T = HealthThresholds(starved_fraction=0.01, starved_samples=4)


def trained(lid: int, norms: list[float]) -> LayerSample:
    return LayerSample(lid, True, norms, 1e-3)


def test_a_layer_far_below_the_median_for_n_samples_is_starved() -> None:
    layers = [trained(0, [1.0] * 6), trained(1, [0.9] * 6), trained(2, [1e-4] * 6)]
    assert starved(layers, T) == {2}
    assert health(layers, T) == {0: OK, 1: OK, 2: STARVED}


def test_one_strong_sample_among_the_last_n_is_not_starved() -> None:
    layers = [trained(0, [1.0] * 6), trained(1, [1.0] * 6), trained(2, [1e-4] * 5 + [0.5])]
    assert starved(layers, T) == set()
    young = [trained(0, [1.0] * 6), trained(1, [1.0] * 6), trained(2, [1e-4] * 3)]
    assert starved(young, T) == set()  # fewer samples than N: not judged yet


def test_a_weaker_but_training_layer_is_not_starved() -> None:
    layers = [trained(0, [1.0] * 8), trained(1, [0.02] * 8)]  # 50x weaker: within 100x
    assert starved(layers, T) == set()


def test_a_frozen_layer_that_moved() -> None:
    layers = [
        trained(0, [1.0] * 4),
        LayerSample(1, False, [], 2e-4),
        LayerSample(2, False, [], 0.0),
    ]
    assert health(layers, T) == {0: OK, 1: MOVED, 2: OK}


def test_thresholds_from_the_plans_metrics() -> None:
    assert HealthThresholds.of_plan({}) == HealthThresholds()
    plan = {"metrics": {"starved_fraction": 0.05, "starved_samples": 3}}
    assert HealthThresholds.of_plan(plan) == HealthThresholds(0.05, 3)
    off = {"metrics": {"starved_fraction": 0}}
    layers = [trained(0, [1.0] * 9), trained(1, [0.0] * 9)]
    assert starved(layers, HealthThresholds.of_plan(off)) == set()
    bad = {"metrics": {"starved_fraction": "x", "starved_samples": True}}
    assert HealthThresholds.of_plan(bad) == HealthThresholds()


def test_plan_keys_are_validated() -> None:
    from repo_paths import TINY_TOML

    from growcockpit.plan import plan_problems
    from growcockpit.plan.load import load_plan

    plan = load_plan(TINY_TOML)
    plan.metrics.starved_fraction = 1.5
    plan.metrics.starved_samples = 0
    keys = {p.key for p in plan_problems(plan)}
    assert {"metrics.starved_fraction", "metrics.starved_samples"} <= keys
