"""The depth gate: a growth speedup is claimed only where the full depth beats every
fixed-size control by more than the seed spread (or the stated one-seed margin)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from growcockpit.compare.depth_gate import (
    ONE_SEED_MARGIN,
    DepthArm,
    DepthGateError,
    control_depths,
    depth_gate,
)


def test_the_cpu_scale_seen_a_one_layer_model_ends_lowest() -> None:
    """Llama at lr 3e-3, an unseen seed: baseline 4.751, depth-1 4.181."""
    gate = depth_gate(DepthArm(8, (4.751,)), [DepthArm(1, (4.181,)), DepthArm(4, (4.40,))])
    assert not gate.pays and gate.best_control.layers == 1 and gate.lowest_layers == 1
    assert gate.text == (
        "depth does not pay at this budget: a fixed 1-layer model ends lowest; "
        "no growth speedup is claimed"
    )


def test_depth_pays_when_every_control_is_beaten_by_more_than_the_spread() -> None:
    base = DepthArm(8, (3.00, 3.02, 3.01))
    gate = depth_gate(base, [DepthArm(1, (3.40, 3.42, 3.38)), DepthArm(4, (3.10, 3.12, 3.11))])
    assert gate.pays and gate.best_control.layers == 4 and gate.lowest_layers == 8
    assert gate.by_spread and gate.needed_gap == pytest.approx(0.02)
    assert gate.text.startswith("depth pays at this budget: the 8-layer baseline ends 0.100")


def test_a_lead_within_the_seed_spread_does_not_pay() -> None:
    base = DepthArm(8, (3.00, 3.10, 3.05))
    gate = depth_gate(base, [DepthArm(1, (3.40,) * 3), DepthArm(4, (3.08, 3.12, 3.10))])
    assert not gate.pays and gate.best_control.layers == 4 and gate.lowest_layers == 8
    assert "ends only 0.050 below a fixed 4-layer model, within the seed spread 0.100" in gate.text
    assert gate.text.endswith("no growth speedup is claimed")


def test_one_seed_is_judged_against_the_stated_margin() -> None:
    close = depth_gate(DepthArm(4, (3.00,)), [DepthArm(1, (3.01,)), DepthArm(2, (3.5,))])
    assert not close.pays and not close.by_spread
    assert f"within the stated one-seed margin {ONE_SEED_MARGIN:.3f}" in close.text
    far = depth_gate(DepthArm(4, (3.00,)), [DepthArm(1, (3.5,))], margin=0.1)
    assert far.pays and far.needed_gap == 0.1


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(DepthGateError, match="at least one"):
        depth_gate(DepthArm(8, (3.0,)), [])
    with pytest.raises(DepthGateError, match="fewer layers"):
        depth_gate(DepthArm(8, (3.0,)), [DepthArm(8, (3.1,))])
    with pytest.raises(DepthGateError, match="no final loss"):
        depth_gate(DepthArm(8, ()), [DepthArm(1, (3.1,))])


def test_default_controls_are_depth_one_and_half_depth() -> None:
    assert control_depths(8) == [1, 4]
    assert control_depths(2) == [1]
    assert control_depths(3) == [1]
    assert control_depths(1) == []


losses = st.lists(st.floats(2.0, 6.0), min_size=1, max_size=4).map(tuple)


@given(losses, st.lists(losses, min_size=1, max_size=3))
def test_it_pays_only_if_the_baseline_ends_strictly_lowest(
    base: tuple[float, ...], arms: list[tuple[float, ...]]
) -> None:
    controls = [DepthArm(i + 1, a) for i, a in enumerate(arms)]
    gate = depth_gate(DepthArm(8, base), controls)
    if gate.pays:
        assert all(c.median > gate.baseline.median for c in controls)
        assert gate.lowest_layers == 8
    else:
        assert gate.text.endswith("no growth speedup is claimed")
    assert gate.best_control.median == min(c.median for c in controls)


def test_a_gate_missing_a_needed_control_is_undecided_never_pays() -> None:
    from growcockpit.compare.depth_gate import DepthArm, depth_gate

    # only the half-depth control finished, far above the baseline: it would "pay"
    alone = depth_gate(DepthArm(8, (3.0,)), [DepthArm(4, (3.5,))])
    assert alone.pays
    gate = depth_gate(DepthArm(8, (3.0,)), [DepthArm(4, (3.5,))], needed=[1, 4])
    assert gate.status == "undecided" and not gate.pays
    assert gate.text.startswith("depth gate undecided: depth-1 did not finish")
    none = depth_gate(DepthArm(8, (3.0,)), [], needed=[1, 4])
    assert none.undecided and none.best_control is None and none.gap is None
    seeds = depth_gate(DepthArm(8, (3.0, 3.01, 3.0)), [DepthArm(4, (3.5, 3.5))], seeds=3)
    assert seeds.undecided and "fewer than 3 seeds" in seeds.text
