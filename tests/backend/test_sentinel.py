"""The loss-spike sentinel's window (backend/loop/sentinel.py), pure: no model, no run.

The device-side score must equal the textbook robust z-score (median / MAD of
the window, the MAD scaled to a standard deviation, floored at 1% of the
median), judge only once its window is full, never let a spike or a
non-finite value into the reference, and read back which step spiked.
"""

from __future__ import annotations

import math
import statistics

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from growcockpit.backend.loop.sentinel import (
    MAD_TO_SIGMA,
    RELATIVE_FLOOR,
    SpikeSentinel,
    SpikeWindow,
    finite,
    first_spike,
    judge,
    passed,
    robust_z,
    spike_facts,
    spike_seen,
)
from growcockpit.backend.loop.step_window import StepWindow

CPU = torch.device("cpu")
TRUE = torch.tensor(True)


def reference_z(window: list[float], x: float) -> float:
    median = statistics.median(window)
    mad = statistics.median([abs(v - median) for v in window])
    scale = max(MAD_TO_SIGMA * mad, RELATIVE_FLOOR * abs(median), 1e-12)
    return (x - median) / scale


def t(x: float) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.float32)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0.01, 100.0), min_size=1, max_size=60).filter(
        lambda xs: len(xs) % 2 == 1  # torch's median of an even count is the lower middle
    ),
    st.floats(0.0, 1000.0),
)
def test_robust_z_is_the_textbook_score(window: list[float], x: float) -> None:
    median, z = robust_z(torch.tensor(window), t(x))
    assert float(median) == pytest.approx(statistics.median(window), rel=1e-5)
    assert float(z) == pytest.approx(reference_z(window, x), rel=1e-3, abs=1e-3)


def test_robust_z_ignores_nan_slots() -> None:
    values = torch.tensor([1.0, 2.0, math.nan, 3.0, math.nan])
    median, z = robust_z(values, t(10.0))
    assert float(median) == 2.0
    assert float(z) == pytest.approx(reference_z([1.0, 2.0, 3.0], 10.0), rel=1e-5)


def feed(window: SpikeWindow, values: list[float]) -> list[bool]:
    oks = []
    for v in values:
        check = window.score(t(v))
        window.record(t(v), check.ok)
        oks.append(bool(check.ok))
    return oks


def noisy(n: int, level: float = 4.0, seed: int = 0) -> list[float]:
    gen = torch.Generator().manual_seed(seed)
    return (level + 0.1 * torch.randn(n, generator=gen)).tolist()


def test_judges_only_once_full_and_fires_on_a_rise_only() -> None:
    w = SpikeWindow(10, 8.0, CPU)
    assert feed(w, [4.0] * 9 + [400.0]) == [True] * 10, "not armed before 10 values"
    w.reset()
    assert all(feed(w, noisy(40)))
    assert feed(w, [40.0]) == [False], "×10 the loss: a spike"
    assert feed(w, [0.5]) == [True], "a fall is training, never a spike"


def test_a_spike_never_enters_its_reference() -> None:
    w = SpikeWindow(10, 8.0, CPU)
    feed(w, noisy(10))
    before = w.values.clone()
    assert feed(w, [50.0, 50.0, 50.0]) == [False] * 3, "still a spike the 3rd time"
    assert torch.equal(w.values, before)


def test_a_non_finite_step_is_not_recorded() -> None:
    w = SpikeWindow(5, 8.0, CPU)
    feed(w, noisy(5))
    before = w.values.clone()
    check = w.score(t(math.nan))
    assert bool(check.ok), "NaN is the finiteness guard's to catch, not a spike"
    w.record(t(math.nan), check.ok)
    w.record(t(4.0), torch.tensor(False))  # the step was skipped for another reason
    assert torch.equal(w.values, before)


def test_flat_loss_ripple_is_not_a_spike() -> None:
    """A MAD of 0 must not turn noise into spikes: the 1% floor of the median."""
    w = SpikeWindow(20, 8.0, CPU)
    feed(w, [3.0] * 20)
    assert feed(w, [3.2]) == [True]  # +6.7% of a flat 3.0: under 8 × 1%
    assert feed(w, [3.3]) == [False]  # +10%: over it


@pytest.mark.parametrize("size,limit", [(0, 8.0), (10, 0.0)])
def test_zero_turns_it_off(size: int, limit: float) -> None:
    w = SpikeWindow(size, limit, CPU)
    assert not w.enabled
    assert all(feed(w, [4.0] * 30 + [1e6]))
    assert judge(SpikeSentinel(size, limit, 0.0, CPU), t(1.0), t(1.0), TRUE) is None


def test_reset_starts_the_window_afresh() -> None:
    w = SpikeWindow(5, 8.0, CPU)
    feed(w, noisy(5))
    assert w.armed
    w.reset()
    assert not w.armed and w.count == 0 and bool(torch.isnan(w.values).all())
    assert feed(w, [400.0]) == [True], "a new level is learned, not judged"


def test_sentinel_gradient_norm_window_and_skip_recording() -> None:
    s = SpikeSentinel(10, 8.0, 8.0, CPU)
    for v in noisy(10):
        judge(s, t(v), t(1.0 + v / 100), TRUE)
    checks = judge(s, t(4.0), t(50.0), TRUE)
    assert checks is not None
    by_loss, by_grad = checks
    assert bool(by_loss.ok) and not bool(by_grad.ok)
    assert int(torch.isclose(s.loss.values, t(4.0)).sum()) == 0, "the skipped step's loss stays out"


def test_window_reads_back_the_first_spike_and_its_step() -> None:
    """Three steps between reads (log_every_steps 3): the 2nd and 3rd spike, the 2nd is named."""
    s = SpikeSentinel(10, 8.0, 0.0, CPU)
    for v in noisy(10):
        judge(s, t(v), t(1.0), TRUE)
    window = StepWindow(CPU)
    for loss in (4.0, 60.0, 90.0):
        checks = judge(s, t(loss), t(1.0), TRUE)
        assert checks is not None
        ok = checks[0].ok & checks[1].ok
        window.add(t(loss), t(1.0), ok, checks)
        window.steps += 1
    outcome = window.read(last_step=33)
    assert outcome.skipped == 2 and not outcome.finite
    spike = outcome.spike
    assert spike is not None
    assert (spike.step, spike.signal, spike.count) == (32, "loss", 2)
    assert spike.value == 60.0 and spike.median == pytest.approx(4.0, abs=0.2)
    assert spike.z > 100, "the z of the 2nd step (60.0), not of the 3rd"
    assert spike.z < float(robust_z(s.loss.values, t(90.0))[1])


def test_spike_facts_round_trip() -> None:
    """The facts a step leaves (read back as floats) name the signal, value and step."""
    s = SpikeSentinel(4, 8.0, 8.0, CPU)
    for v in (1.0, 1.1, 0.9, 1.0):
        judge(s, t(v), t(1.0 + v / 100), TRUE)
    calm = judge(s, t(1.0), t(1.01), TRUE)
    by_grad = judge(s, t(1.0), t(90.0), TRUE)
    assert calm is not None and by_grad is not None
    facts = [(i, torch.stack(spike_facts(c)).tolist()) for i, c in enumerate((calm, by_grad))]
    fired = first_spike(facts)
    assert fired is not None
    count, row = fired
    seen = spike_seen(row, last_step=100, steps=2, count=count)
    assert (seen.step, seen.signal, seen.value, seen.count) == (100, "gradient norm", 90.0, 1)
    assert first_spike(facts[:1]) is None


@pytest.mark.parametrize("x", [0.0, -3.5, 1e30, 3e38, math.inf, -math.inf, math.nan])
def test_finite_is_isfinite(x: float) -> None:
    assert bool(finite(t(x))) == math.isfinite(x)


def test_unjudged_windows_fold_nothing_into_the_flag() -> None:
    """Off or still filling: no operator for the step's flag; once judging, the verdict."""
    s = SpikeSentinel(3, 8.0, 0.0, CPU)
    checks = judge(s, t(1.0), t(1.0), TRUE)
    assert checks is not None and passed(checks) is None
    for v in (1.0, 1.1):
        judge(s, t(v), t(1.0), TRUE)
    armed = judge(s, t(50.0), t(1.0), TRUE)
    assert armed is not None
    verdict = passed(armed)
    assert verdict is not None and not bool(verdict)


def test_after_a_spike_a_ceiling_guards_the_refill() -> None:
    """A blow-up that goes on after a resume (1.9e6 → 9.4e10 in six steps) is
    caught as it rises, not once NaN: while the window refills, a value over 10x the
    pre-spike median is a spike; an expected new level under it is learned as before."""
    w = SpikeWindow(10, 8.0, CPU)
    feed(w, noisy(10))
    assert feed(w, [1.9e6]) == [False]
    w.refill()  # what the read after the spike does; the user then resumes
    assert not w.armed and w.count == 0
    assert feed(w, [3.2e7, 9.4e10]) == [False, False], "the blow-up goes on: still caught"
    assert feed(w, [30.0, 39.0] * 4) == [True] * 8, "a new level under the ceiling is learned"
    assert feed(w, [30.0]) == [True]
    assert w.armed and not w.refilling, "full again: the ceiling is gone, z judges"
    assert feed(w, [1.9e3]) == [False]


def test_the_refill_ceiling_reads_back_as_such() -> None:
    s = SpikeSentinel(5, 8.0, 0.0, CPU)
    for v in noisy(5):
        judge(s, t(v), t(1.0), TRUE)
    s.refill()
    window = StepWindow(CPU)
    checks = judge(s, t(1e6), t(1.0), TRUE)
    assert checks is not None and not bool(checks[0].ok)
    window.add(t(1e6), t(1.0), checks[0].ok & checks[1].ok, checks)
    window.steps += 1
    spike = window.read(last_step=7).spike
    assert spike is not None and spike.median == pytest.approx(4.0, abs=0.2)
    assert s.loss.refilling, "StepRunner.read marks spike.ceiling from this"


def test_reset_drops_the_ceiling() -> None:
    w = SpikeWindow(5, 8.0, CPU)
    feed(w, noisy(5))
    w.refill()
    w.reset()  # a new stage or a restored checkpoint: another loss level
    assert feed(w, [400.0]) == [True]


def test_a_solved_task_rippling_a_tenth_of_a_nat_is_not_a_loss_spike() -> None:
    """A loss near 0.01 (an exact task all but solved) has a MAD near zero: without the
    loss window's floor of LOSS_FLOOR nats a rise to 0.17 scored z ≈ 35 and paused a run."""
    from growcockpit.backend.loop.sentinel import LOSS_FLOOR

    sentinel = SpikeSentinel(10, 8.0, 0.0, CPU)
    solved = [0.01 + 0.002 * (i % 3) for i in range(10)]
    for v in solved:
        judge(sentinel, t(v), t(1.0), TRUE)
    loss_check, _ = judge(sentinel, t(0.17), t(1.0), TRUE) or (None, None)
    assert loss_check is not None and bool(loss_check.ok), "a tenth of a nat: noise"
    assert float(loss_check.z) == pytest.approx((0.17 - 0.012) / LOSS_FLOOR, rel=1e-3)
    loss_check, _ = judge(sentinel, t(1.5), t(1.0), TRUE) or (None, None)
    assert loss_check is not None and not bool(loss_check.ok), "1.5 nats up is a blow-up"
    # the gradient-norm window has no floor in nats (other units): its scale is unchanged
    assert sentinel.grad.floor < LOSS_FLOOR
