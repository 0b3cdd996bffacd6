"""The full model's envelope: the least cost to a target over the long baseline and its
short schedules, for a loss (lower is better) and an accuracy (higher is better)."""

from __future__ import annotations

import pytest

from growcockpit.compare.envelope import (
    CurvePoint,
    Target,
    control_words,
    cost_to,
    envelope,
    is_short_control,
    metric_of,
    points,
)


def _curve(
    values: list[float], flops_per_eval: float = 1.0, wall_per_eval: float = 1.0
) -> list[CurvePoint]:
    return [
        CurvePoint((i + 1) * flops_per_eval, (i + 1) * wall_per_eval, v)
        for i, v in enumerate(values)
    ]


def test_a_loss_target_is_crossed_where_the_curve_first_falls_to_it_interpolated() -> None:
    reach = cost_to(_curve([5.0, 4.0, 3.0, 2.0]), Target("val_loss", 3.5))
    assert (
        reach is not None
        and reach.flops == pytest.approx(2.5)
        and reach.wall_s == pytest.approx(2.5)
    )
    assert cost_to(_curve([5.0, 4.0]), Target("val_loss", 3.0)) is None


def test_an_accuracy_target_is_met_from_below() -> None:
    target = Target("accuracy", 0.95)
    reach = cost_to(_curve([0.5, 0.9, 1.0]), target)
    assert reach is not None and reach.flops == pytest.approx(2.5)
    assert cost_to(_curve([0.5, 0.9, 0.94]), target) is None
    assert target.met(0.95) and not target.met(0.949) and not target.met(float("nan"))
    assert Target("val_loss", 2.0).met(1.9) and not Target("val_loss", 2.0).met(2.1)


def test_the_envelope_takes_the_short_schedule_that_reaches_the_target_first() -> None:
    # the long baseline reaches 3.0 only at its end (FLOPs 10); full@0.5, decayed at its own
    # end, reaches it at FLOPs 4, at more wall time per FLOP (its steps were slower)
    long = _curve([6, 5.5, 5, 4.5, 4.2, 4.0, 3.6, 3.4, 3.2, 3.0])
    half = _curve([6, 5, 4, 2.9, 2.8], wall_per_eval=3.0)
    env = envelope({"baseline": long, "full@0.5": half}, Target("val_loss", 3.0))
    assert env.flops_by == "full@0.5" and env.flops == pytest.approx(3.0 + 1.0 / 1.1)
    assert env.wall_by == "baseline" and env.wall_s == pytest.approx(10.0)
    nobody = envelope({"baseline": long}, Target("val_loss", 1.0))
    assert nobody.flops is None and nobody.flops_by is None


def test_accuracy_envelope_and_the_bench_dicts() -> None:
    evals = [{"step": 10, "wall_s": 1.0, "flops": 2.0, "val_loss": 3.0, "accuracy": 0.5},
             {"step": 20, "wall_s": 2.0, "flops": 4.0, "val_loss": 2.0, "accuracy": 0.97},
             {"step": 30, "wall_s": 3.0, "flops": 6.0, "val_loss": 1.0}]  # fmt: skip
    acc = points(evals, "accuracy")
    assert [p.value for p in acc] == [0.5, 0.97]  # the evaluation without accuracy is left out
    env = envelope({"baseline": acc}, Target("accuracy", 0.95))
    assert env.flops == pytest.approx(2.0 + 2.0 * 0.45 / 0.47)


def test_names_of_the_controls_say_what_they_are() -> None:
    assert is_short_control("full@0.5") and is_short_control("full@plan")
    assert not is_short_control("baseline") and not is_short_control("full@x")
    assert control_words("full@0.5") == "the full model trained for half the budget (full@0.5)"
    assert "growth plan's own FLOPs" in control_words("full@plan")
    assert control_words("depth-2") == "a fixed 2-layer model (depth-2)"
    assert metric_of("accuracy") == "accuracy"
    with pytest.raises(ValueError, match="one of val_loss, accuracy"):
        metric_of("acc")
