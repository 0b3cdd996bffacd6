"""`rewarmup_steps` (LR warm-up after a stage's operator) and Adam carry-over."""

from __future__ import annotations

import pytest
import torch
from grow_fixtures import tiny_batch, tiny_model

from growcockpit.backend.loop.forward import StagedForward
from growcockpit.backend.loop.optim import build_optimizer, lr_at
from growcockpit.grow import apply_freeze, carry_optimizer_state, get_layers, stack_layers
from growcockpit.plan import Plan, PlanError, Stage, loads_plan
from growcockpit.plan.types import OptimSpec


def _plan(second: Stage, schedule: str = "constant") -> Plan:
    return Plan(
        "p",
        optim=OptimSpec(lr=1.0, warmup_steps=5, schedule=schedule),
        stages=[Stage("s0", 2, 10, enter="init"), second],
    )


def test_rewarmup_ramps_to_the_continued_schedule() -> None:
    plan = _plan(Stage("g", 4, 40, enter="stack", rewarmup_steps=4), schedule="linear")
    for t in range(6):
        decay = 1.0 - 0.9 * (10 + t) / 50
        assert lr_at(plan, 1, t, 10 + t) == pytest.approx(decay * min(1.0, (t + 1) / 4))
    # 0: back to the full scheduled LR at once (MSG); first stage: optim.warmup_steps
    assert lr_at(_plan(Stage("g", 4, 40, enter="stack", rewarmup_steps=0)), 1, 0, 10) == 1.0
    assert lr_at(plan, 0, 0, 0) == pytest.approx(1 / 5)


def test_default_and_older_spelling() -> None:
    # no rewarmup given: min(optim.warmup_steps, steps / 10) = 4 steps
    plan = _plan(Stage("g", 4, 40, enter="stack"))
    assert lr_at(plan, 1, 0, 10) == pytest.approx(1 / 4)
    plan = _plan(Stage("g", 4, 40, enter="stack", warmup_steps=2))
    assert lr_at(plan, 1, 0, 10) == pytest.approx(1 / 2)


BASE = """
name = "w"
[model]
final_layers = 4
[[stages]]
name = "s0"
layers = 2
steps = 10
{first}
[[stages]]
name = "s1"
layers = 4
enter = "stack"
steps = 10
{second}
"""


@pytest.mark.parametrize(
    ("first", "second", "phrase"),
    [
        ("rewarmup_steps = 3", "", "the first stage has none"),
        ("", "rewarmup_steps = 3\nwarmup_steps = 2", "keep one"),
        ("", "rewarmup_steps = -1", "≥ 0"),
    ],
)
def test_rewarmup_validation(first: str, second: str, phrase: str) -> None:
    with pytest.raises(PlanError, match=phrase):
        loads_plan(BASE.format(first=first, second=second))
    loads_plan(BASE.format(first="", second="rewarmup_steps = 3"))


def test_middle_copies_carry_their_sources_moments() -> None:
    model = tiny_model("gpt2", layers=4)
    apply_freeze(model, [0, 1, 2, 3], True, True)
    old = build_optimizer(model, OptimSpec(), 1e-3)
    StagedForward(0, True).loss(model, tiny_batch("gpt2")).backward()
    old.step()
    result = stack_layers(model, 2, "middle")  # copies of 1, 2 at 3, 4
    apply_freeze(model, [3, 4], False, True)
    new = build_optimizer(model, OptimSpec(), 1e-3)
    counts = carry_optimizer_state(old, new, model, result)
    layers = get_layers(model)
    assert counts["copied"] == sum(1 for i in (3, 4) for _ in layers[i].parameters())
    for dst, src in ((3, 1), (4, 2)):
        for (_, pd), (_, ps) in zip(
            layers[dst].named_parameters(), layers[src].named_parameters(), strict=True
        ):
            assert torch.equal(new.state[pd]["exp_avg"], old.state[ps]["exp_avg"])
