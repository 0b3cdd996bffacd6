"""Cost model against hand-computed values."""

from __future__ import annotations

import pytest

from growcockpit.plan import (
    DataSpec,
    ModelSpec,
    Plan,
    PlanCost,
    Stage,
    default_head_cost,
    format_plan,
    load_plan,
    loads_plan,
    step_cost,
)
from growcockpit.plan import estimate_cost as default_estimate
from growcockpit.resources import sample_plan


def estimate_cost(plan: Plan, r: float = 2.0, h: float | None = None, **kw: object) -> PlanCost:
    """The cost model as written (its oracles); the refined default is tested below."""
    kw.setdefault("refined", False)
    return default_estimate(plan, r, h, **kw)  # type: ignore[arg-type]


BERT_BASE = ModelSpec(
    family="bert",
    hidden_size=768,
    num_heads=12,
    intermediate_size=3072,
    max_seq_len=512,
    final_layers=12,
)


def one_stage(train: str, embeddings: str | None = None, layers: int = 12) -> Plan:
    stage = Stage("s", layers, 100, enter="init", train=train, embeddings=embeddings)
    return Plan(name="p", model=BERT_BASE, stages=[stage])


@pytest.mark.parametrize(("k", "speedup"), [(1, 36 / 14), (3, 2.0), (6, 1.5), (12, 1.0)])
def test_frozen_bottom_speedups(k: int, speedup: float) -> None:
    # the formula: L = 12, r = 2, h = 0: S(k) = 3L / (L + 2k); 2.57, 2.0, 1.5; S(L) = 1
    cost = estimate_cost(one_stage(f"top:{k}"), r=2.0, h=0.0)
    assert cost.speedup == pytest.approx(speedup)
    assert cost.ratio == pytest.approx(1 / speedup)
    assert cost.stages[0].trainable == k
    assert cost.baseline_step_cost == pytest.approx(36.0)
    assert cost.baseline_total == pytest.approx(3600.0)


def test_speedup_decreasing_in_k_and_bounded() -> None:
    for r in (1.0, 2.0, 3.0):
        speedups = [estimate_cost(one_stage(f"top:{k}"), r=r, h=0.0).speedup for k in range(1, 13)]
        assert all(a > b for a, b in zip(speedups, speedups[1:], strict=False))
        assert speedups[0] < 1 + r and speedups[-1] == pytest.approx(1.0)
        # k -> 0 (only the head trains) approaches but does not exceed 1 + r
        assert estimate_cost(one_stage("none"), r=r, h=0.0).speedup == pytest.approx(1 + r)


def test_not_detached_variant_capped_at_1_5() -> None:
    # embeddings train, so the gradient runs back through the frozen blocks: 2f each for r = 2
    cost = estimate_cost(one_stage("top:1", embeddings="train"), r=2.0, h=0.0)
    assert cost.stages[0].step_cost == pytest.approx(11 * 2 + 3)
    assert cost.speedup == pytest.approx(36 / 25)
    for k in range(0, 13):
        train = "none" if k == 0 else f"top:{k}"
        assert (
            estimate_cost(one_stage(train, embeddings="train"), r=2.0, h=0.0).speedup <= 1.5 + 1e-12
        )


def test_head_cost_defaults() -> None:
    # BERT-Base: 30522·768 / (12·768²) ≈ 3.31 blocks per token at all positions, ≈ 0.5 at 15 % masked
    plan = Plan(name="p", model=BERT_BASE, data=DataSpec(tokenizer="bert-base-uncased"), stages=[])
    assert default_head_cost(plan) == pytest.approx(30522 / (12 * 768) * 0.15)
    assert default_head_cost(plan) == pytest.approx(0.497, abs=1e-3)
    gpt = Plan(
        name="p",
        model=ModelSpec(family="gpt2", hidden_size=768, num_heads=12, intermediate_size=3072),
        data=DataSpec(tokenizer="gpt2"),
    )
    assert default_head_cost(gpt) == pytest.approx(50257 / (12 * 768))
    trained = Plan(
        name="p",
        model=ModelSpec(hidden_size=128, intermediate_size=512),
        data=DataSpec(tokenizer="train:8000"),
    )
    assert default_head_cost(trained) == pytest.approx(8000 / (12 * 128) * 0.15)


def test_head_lowers_speedup() -> None:
    # h ≈ 3.3 and k = 3 gives ≈ 1.65×
    assert estimate_cost(one_stage("top:3"), r=2.0, h=3.3).speedup == pytest.approx(1.65, abs=0.01)
    assert step_cost(12, 3, r=2.0, h=3.3) == pytest.approx(12 + 6 + 3 * 3.3)


def test_cpu_demo_by_hand() -> None:
    plan = load_plan(sample_plan("cpu-demo"))
    n1, n2, n3 = (s.steps for s in plan.stages)
    cost = estimate_cost(plan, r=2.0, h=0.0)
    # 2 layers all trained: 3·2; 4 layers, top 2 trained, bottom under no_grad: 4 + 2·2; 4 layers all: 3·4
    assert [s.step_cost for s in cost.stages] == pytest.approx([6.0, 8.0, 12.0])
    assert [s.total for s in cost.stages] == pytest.approx([6.0 * n1, 8.0 * n2, 12.0 * n3])
    assert [s.rel_step_cost for s in cost.stages] == pytest.approx([0.5, 8 / 12, 1.0])
    total = 6.0 * n1 + 8.0 * n2 + 12.0 * n3
    baseline = 12.0 * (n1 + n2 + n3)
    assert cost.total == pytest.approx(total)
    assert cost.baseline_total == pytest.approx(baseline)
    assert cost.ratio == pytest.approx(total / baseline)
    assert cost.speedup == pytest.approx(baseline / total)

    h = 8000 / (12 * 128) * 0.15
    with_head = estimate_cost(plan)
    assert with_head.h == pytest.approx(h)
    assert with_head.stages[1].step_cost == pytest.approx(4 + 2 * 2 + 3 * h)
    assert with_head.baseline_step_cost == pytest.approx(3 * (4 + h))


VCYCLE = """\
name = "v"
[model]
hidden_size = 128
num_heads = 4
intermediate_size = 512
final_layers = 4
[[stages]]
name = "warm"
layers = 4
steps = 10
[[stages]]
name = "coarse"
enter = "coalesce"
layers = 2
steps = 20
[[stages]]
name = "fine"
enter = "interpolate"
layers = 4
steps = 20
"""


def test_width_scaling() -> None:
    plan = loads_plan(VCYCLE)
    cost = estimate_cost(plan, r=2.0, h=0.0)
    # coarse: 2 layers at width 64: 3 · 2 · (1/2)² = 1.5 per step
    assert [s.step_cost for s in cost.stages] == pytest.approx([12.0, 1.5, 12.0])
    assert cost.total == pytest.approx(120 + 30 + 240)
    assert cost.ratio == pytest.approx(390 / 600)
    # head scales by w/d: 3 · (2 · 1/4 + 1 · 1/2) = 3
    assert estimate_cost(plan, r=2.0, h=1.0).stages[1].step_cost == pytest.approx(3.0)


def test_frozen_head_refinement() -> None:
    assert step_cost(4, 2, r=2.0, h=1.0, head_trainable=False) == pytest.approx(4 + 4 + 2.0)
    assert step_cost(4, 0, r=2.0, h=1.0, head_trainable=False) == pytest.approx(4 + 1.0)


def test_format_plan() -> None:
    plan = loads_plan(VCYCLE)
    text = format_plan(plan, estimate_cost(plan, h=0.0))
    assert text.splitlines()[0] == "plan: v"
    assert "coalesce (adjacent)" in text and "interpolate (adjacent, α=0.5)" in text
    assert "128→64" in text and "4→2" in text
    assert f"0.65 × the full-depth baseline over the same {plan.total_steps} steps" in text
    assert "speedup 1.54×" in text
    demo = format_plan(load_plan(sample_plan("cpu-demo")))
    assert "stack (top)" in demo and "2-3" in demo


# ---- refined model (bench/stage_cost.py checks it against measured steps) -------------
def test_refined_matches_textbook_when_everything_trains() -> None:
    for r in (1.0, 1.7, 2.0):
        for h in (0.0, 0.5, 2.3):
            full = step_cost(12, 12, r=r, h=h, embeddings_trainable=True, refined=True)
            assert full == pytest.approx((1 + r) * (12 + h))
            assert full == pytest.approx(step_cost(12, 12, r=r, h=h, embeddings_trainable=True))


def test_refined_frozen_bottom_terms() -> None:
    # 12 layers, top 3, r = 2, h = 1, frozen forwards at 0.75 of a training forward:
    # 9 × 0.75 frozen + 3 × 3 trained − 1 (lowest: no input grad) + head (1 + r/2) · 1
    cost = step_cost(12, 3, r=2.0, h=1.0, refined=True, frozen_fwd=0.75)
    assert cost == pytest.approx(9 * 0.75 + 9 - 1 + 2)
    # textbook: 9 + 9 + 3 · 1
    assert step_cost(12, 3, r=2.0, h=1.0) == pytest.approx(21)
    # embeddings train: gradients cross the frozen blocks; the tied decoder gets a weight grad
    emb = step_cost(12, 3, r=2.0, h=1.0, embeddings_trainable=True, refined=True, frozen_fwd=0.75)
    assert emb == pytest.approx(9 * (0.75 + 1) + 9 + 3)
    # nothing trains at all: forward only
    assert step_cost(12, 0, r=2.0, h=1.0, head_trainable=False, refined=True) == pytest.approx(13)


def test_refined_estimate_is_cheaper_and_bounded() -> None:
    plan = load_plan(sample_plan("mslt-bert-base"))
    textbook = estimate_cost(plan, r=2.0)
    refined = estimate_cost(plan, r=2.0, refined=True)
    assert refined.baseline_step_cost == pytest.approx(textbook.baseline_step_cost)
    assert refined.speedup > textbook.speedup
    for a, b in zip(refined.stages, textbook.stages, strict=True):
        assert a.step_cost <= b.step_cost + 1e-12
    # with r = 2, h = 0, frozen forward = 1: top 1 of 12 gives 36 / (11 + 3 − 1)
    assert estimate_cost(one_stage("top:1"), r=2.0, h=0.0, refined=True).speedup == pytest.approx(
        36 / 13
    )


def test_default_estimate_is_the_refined_model() -> None:
    """`plan show` and the designer use the refined model: bench/stage_cost.py measured it
    within 6 % on every MSLT stage where the textbook formula was off by up to 27 %."""
    plan = load_plan(sample_plan("cpu-demo"))
    assert default_estimate(plan).speedup == pytest.approx(
        estimate_cost(plan, refined=True).speedup
    )
    assert default_estimate(plan).speedup > estimate_cost(plan).speedup
