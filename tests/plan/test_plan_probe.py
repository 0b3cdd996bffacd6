"""`enter = "probe"` in the plan layer: validation of the stage and its candidates, the
label, the saved file, and the probe's compute in the cost model and the budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from growcockpit.plan import PlanError, dump_plan, estimate_cost, format_plan, loads_plan
from growcockpit.plan.operators import operator_label

PROBE = (Path(__file__).parents[1] / "plans" / "tiny-probe.toml").read_text()
CANDIDATES = (
    'candidates = [{ enter = "stack", source = "top" }, { enter = "stack", init = "zero" }]'
)


def _with(old: str, new: str, text: str = PROBE) -> str:
    assert old in text
    return text.replace(old, new)


def test_a_probe_stage_loads_labels_saves_and_is_priced() -> None:
    plan = loads_plan(PROBE, "probe.toml")
    stage = plan.stages[1]
    assert stage.probe_steps == 3 and len(stage.candidates) == 2
    assert (
        operator_label(stage, "gpt2")
        == "probe (3 steps each, stack (top) | stack (top, zero init))"
    )
    assert loads_plan(dump_plan(plan)).stages == plan.stages  # saved and read back
    cost = estimate_cost(plan)
    probe = cost.stages[1]
    assert probe.probe == pytest.approx(2 * 3 * probe.step_cost)
    assert probe.total == pytest.approx(probe.step_cost * 6 + probe.probe)
    plain = estimate_cost(
        loads_plan(
            _with(CANDIDATES, "", _with('enter = "probe"\nprobe_steps = 3', 'enter = "stack"'))
        )
    )
    assert cost.total - plain.total == pytest.approx(probe.probe)
    assert "probe:  stage 2 trains 2 candidates × 3 steps" in format_plan(plan)


def test_a_budget_counts_the_probe() -> None:
    text = _with(
        '[[stages]]\nname = "shallow"',
        '[budget]\nbaseline_steps = 20\n\n[[stages]]\nname = "shallow"',
    )
    text = text + '\n[[stages]]\nname = "all"\nlayers = 4\nsteps = 1\nfill = true\n'
    plan = loads_plan(text)
    cost = estimate_cost(plan)
    assert cost.total == pytest.approx(20 * cost.baseline_step_cost, abs=cost.stages[2].step_cost)


@pytest.mark.parametrize(
    ("old", "new", "key", "message"),
    [
        ("probe_steps = 3\n", "", "stages[1].probe_steps", "give the steps each candidate trains"),
        (
            "probe_steps = 3",
            "probe_steps = 7",
            "stages[1].probe_steps",
            "7 > the stage's steps (6)",
        ),
        (CANDIDATES, 'candidates = [{ enter = "stack" }]', "stages[1].candidates", "two or more"),
        (
            'source = "top" }',
            'sorce = "top" }',
            "stages[1].candidates[0].sorce",
            'unknown candidate key "sorce"',
        ),
        (
            'enter = "stack", init',
            'enter = "init", init',
            "stages[1].candidates[1].enter",
            "cannot be a candidate",
        ),
        ('source = "top" }', 'source = "sideways" }', "stages[1].candidates[0].source", "sideways"),
        ('source = "top" }', "source = 3 }", "stages[1].candidates[0].source", "expected a string"),
        (
            'enter = "stack", init = "zero" }',
            'enter = "continue" }',
            "stages[1].candidates[1].layers",
            '"continue" keeps the depth',
        ),
        ("probe_steps = 3\ncandidates", "candidates", "stages[1].probe_steps", "give the steps"),
    ],
)
def test_bad_probes_are_one_line_errors_naming_the_key(
    old: str, new: str, key: str, message: str
) -> None:
    with pytest.raises(PlanError) as info:
        loads_plan(_with(old, new), "probe.toml")
    assert info.value.key == key and message in info.value.problem
    assert "\n" not in str(info.value)


def test_candidates_reuse_the_family_recipe_checks_and_probe_keys_belong_to_probe() -> None:
    bert = _with('family = "gpt2"', 'family = "bert"')
    with pytest.raises(PlanError) as info:  # zero init is refused for post-LN BERT, as on a stage
        loads_plan(bert)
    assert info.value.key == "stages[1].candidates[1].init"
    stack = _with('enter = "probe"', 'enter = "stack"')
    with pytest.raises(PlanError) as info:
        loads_plan(stack)
    assert info.value.key in ("stages[1].probe_steps", "stages[1].candidates")
    assert 'only applies to enter = "probe"' in info.value.problem
