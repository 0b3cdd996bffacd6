"""`schedule = "wsd"`: the LR curve of plan/schedule.py (pure logic)."""

from __future__ import annotations

import dataclasses
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from growcockpit.plan import OptimSpec, Plan, PlanError, Stage, loads_plan, plan_problems
from growcockpit.plan.edit import end_stage_early
from growcockpit.plan.schedule import decay_start, global_factor, lr_at, lr_curve

# GPT-2 4 × 128 with h = 1 (tests/plan/test_plan_budget.py): shallow and grow cost 9 units a
# step, the baseline 15; 20 baseline steps = 300 units, so "all" is fitted to 8 steps
BUDGETED = """\
name = "budgeted"
[model]
family = "gpt2"
hidden_size = 128
num_heads = 4
intermediate_size = 512
max_seq_len = 64
final_layers = 4
[data]
tokenizer = "train:1536"
seq_len = 64
[optim]
lr = 1.0
schedule = "wsd"
decay_fraction = FRACTION
[budget]
baseline_steps = 20
[[stages]]
name = "shallow"
layers = 2
steps = 10
[[stages]]
name = "grow"
enter = "stack"
layers = 4
train = "new"
steps = 10
[[stages]]
name = "all"
layers = 4
"""


def budget_text(fraction: float = 0.25) -> str:
    return BUDGETED.replace("FRACTION", repr(fraction))


def _plan(steps: list[int], fraction: float = 0.2, warmup: int = 5, lr: float = 1.0) -> Plan:
    stages = [Stage("s0", 1, steps[0], enter="init")]
    stages += [
        Stage(f"s{i}", 4, n, enter="stack", rewarmup_steps=0) for i, n in enumerate(steps[1:], 1)
    ]
    optim = OptimSpec(lr=lr, warmup_steps=warmup, schedule="wsd", decay_fraction=fraction)
    return Plan("w", optim=optim, stages=stages)


def test_warmup_stable_decay_pieces() -> None:
    plan = _plan([100], warmup=10)
    lrs = lr_curve(plan)
    assert lrs[:10] == pytest.approx([(t + 1) / 10 for t in range(10)])  # linear warm-up
    assert lrs[10:80] == pytest.approx([1.0] * 70)  # the stable peak
    assert decay_start(plan) == 80
    assert lrs[80:] == pytest.approx([(100 - t) / 20 for t in range(80, 100)])  # → 0
    assert lrs[-1] == pytest.approx(1 / 20) and global_factor("wsd", 100, 100) == 0.0


def test_one_schedule_across_stages_decays_in_the_last() -> None:
    plan = _plan([900, 100], fraction=0.1)
    lrs = lr_curve(plan)
    assert decay_start(plan) == 900  # the expansion lands at the stable peak
    assert lrs[899] == pytest.approx(1.0) and lrs[900] == pytest.approx(1.0)
    assert lrs[950] == pytest.approx(0.5)
    # the same global factor as a one-stage plan of the same total: nothing restarts
    assert lrs == pytest.approx(lr_curve(_plan([1000], fraction=0.1)))


def test_decay_fraction_one_is_a_linear_decay_to_zero() -> None:
    lrs = lr_curve(_plan([50], fraction=1.0, warmup=0))
    assert lrs == pytest.approx([(50 - t) / 50 for t in range(50)])


def test_older_schedules_unchanged() -> None:
    assert global_factor("linear", 25, 50) == pytest.approx(0.55)
    assert global_factor("cosine", 50, 50) == pytest.approx(0.1)
    assert global_factor("constant", 7, 50) == 1.0


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(st.integers(1, 400), min_size=1, max_size=4),
    fraction=st.floats(0.01, 1.0),
    warmup=st.integers(0, 50),
    lr=st.floats(1e-5, 1e-1),
)
def test_wsd_properties(steps: list[int], fraction: float, warmup: int, lr: float) -> None:
    plan = _plan(steps, fraction, warmup, lr)
    lrs = lr_curve(plan)
    total = plan.total_steps
    assert len(lrs) == total and max(lrs) <= lr * (1 + 1e-9)
    assert all(v > 0 for v in lrs)  # every trained step moves the weights
    start = decay_start(plan)
    assert start is not None and 0 <= start <= total
    first = min(warmup, steps[0])
    # warm-up rises (before the decay), the decay falls (once warm); the peak in between
    rise = lrs[: min(first, start)]
    assert all(a <= b * (1 + 1e-9) for a, b in pairwise(rise))
    assert all(b <= a * (1 + 1e-9) for a, b in pairwise(lrs[max(start, first) :]))
    if first < start:
        assert lrs[first:start] == pytest.approx([lr] * (start - first))
    warm_last = min(1.0, steps[0] / warmup) if len(steps) == 1 and warmup else 1.0
    assert lrs[-1] == pytest.approx(lr * warm_last * min(1.0, 1 / (fraction * total)))


@settings(max_examples=60, deadline=None)
@given(done=st.integers(1, 9))
def test_refit_when_a_stage_ends_early(done: int) -> None:
    """A plateau or `advance` ends stage 1 early: the budget's fill stage is refitted, and
    the decay moves with the new total (the engine asks lr_at with the replanned plan)."""
    plan = loads_plan(budget_text(0.25))
    assert plan.total_steps == 28 and decay_start(plan) == 21
    early = end_stage_early(plan, 0, done)
    total = early.total_steps
    assert total != 28  # the fill stage took the saved compute
    assert decay_start(early) == pytest.approx(total - 0.25 * total, abs=1)
    assert lr_at(early, 2, early.stages[2].steps - 1, total - 1) == pytest.approx(
        1 / (0.25 * total)
    )


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5])
def test_decay_fraction_validated(bad: float) -> None:
    with pytest.raises(PlanError, match="decay_fraction"):
        loads_plan(budget_text(bad))


def test_schedule_wsd_round_trips_and_shows() -> None:
    from growcockpit.plan import dump_plan, format_plan

    plan = _plan([10, 10], fraction=0.3)
    assert not [p for p in plan_problems(plan) if "decay_fraction" in str(p)]
    again = loads_plan(dump_plan(plan))
    assert again.optim.schedule == "wsd" and again.optim.decay_fraction == pytest.approx(0.3)
    assert "wsd schedule (decay over the last 30% of the steps)" in format_plan(plan)
    assert dataclasses.replace(plan.optim, schedule="linear").decay_fraction == 0.3
