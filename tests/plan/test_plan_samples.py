"""`[samples]` plan keys: defaults (off), the checks with their one-line fixes, the cadence,
round trips through the saved TOML, and a property test of arbitrary values."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from growcockpit.plan import PlanError, dump_plan, loads_plan
from growcockpit.plan.load import dict_problems, plan_from_dict, text_problems
from growcockpit.plan.samples import DEFAULT_PROMPTS, prompts_of, samples_due
from growcockpit.plan.types import SamplesSpec
from growcockpit.resources import sample_plans_dir

BASE = """\
name = "s"
[model]
family = "{family}"
final_layers = 2
[metrics]
eval_every_steps = {eval_every}
{samples}
[[stages]]
name = "a"
layers = 2
steps = 10
"""


def plan_text(samples: str = "", family: str = "gpt2", eval_every: int = 5) -> str:
    return BASE.format(family=family, eval_every=eval_every, samples=samples)


def test_samples_are_off_by_default_and_in_every_shipped_plan() -> None:
    assert loads_plan(plan_text()).samples == SamplesSpec()
    for path in sorted(sample_plans_dir().glob("*.toml")):
        assert loads_plan(path.read_text(), str(path)).samples.every_evals == 0, path


def test_a_family_gets_its_kind_of_default_prompts() -> None:
    assert prompts_of(loads_plan(plan_text())) == list(DEFAULT_PROMPTS["causal"])
    bert = loads_plan(plan_text(family="bert"))
    assert prompts_of(bert) == list(DEFAULT_PROMPTS["masked"])
    assert all("[MASK]" in p for p in prompts_of(bert))
    own = loads_plan(plan_text('[samples]\nprompts = ["Once upon"]'))
    assert prompts_of(own) == ["Once upon"]


@pytest.mark.parametrize(
    ("samples", "family", "eval_every", "key", "fix"),
    [
        ("every_evals = 1", "gpt2", 0, "samples.every_evals", "set metrics.eval_every_steps"),
        ("every_evals = -1", "gpt2", 5, "samples.every_evals", "0 (off)"),
        ('prompts = ["The king"]', "bert", 5, "samples.prompts[0]", "has no [MASK]"),
        ('prompts = [""]', "gpt2", 5, "samples.prompts[0]", "is empty"),
        ("prompts = [1]", "gpt2", 5, "samples.prompts[0]", "in quotes"),
        ('prompts = "The king"', "gpt2", 5, "samples.prompts", "write [ ... ]"),
        ("max_new_tokens = 0", "gpt2", 5, "samples.max_new_tokens", "e.g. 24"),
        ("max_new_tokens = 100000", "gpt2", 5, "samples.max_new_tokens", "1 … 256"),
        ("temperature = -0.5", "gpt2", 5, "samples.temperature", "0 is greedy"),
        ("top_k = -3", "gpt2", 5, "samples.top_k", "0 (all tokens)"),
        ("mask_predictions = 0", "bert", 5, "samples.mask_predictions", "e.g. 5"),
        ("seed = -1", "gpt2", 5, "samples.seed", "non-negative"),
        ("every_eval = 1", "gpt2", 5, "samples.every_eval", 'did you mean "every_evals"'),
    ],
)
def test_a_bad_key_names_itself_and_the_fix(
    samples: str, family: str, eval_every: int, key: str, fix: str
) -> None:
    text = plan_text(f"[samples]\n{samples}", family, eval_every)
    problems = text_problems(text, "p.toml")
    assert problems, samples
    first = problems[0]
    assert first.key == key and fix in str(first) and "\n" not in str(first)
    assert first.line == text.splitlines().index(samples.split("\n")[-1]) + 1
    with pytest.raises(PlanError):
        loads_plan(text)


def test_too_many_prompts_are_refused() -> None:
    prompts = ", ".join(f'"p{i}"' for i in range(9))
    problems = text_problems(plan_text(f"[samples]\nprompts = [{prompts}]"))
    assert [p.key for p in problems] == ["samples.prompts"] and "at most 8" in str(problems[0])


def test_samples_survive_a_save_and_load() -> None:
    text = plan_text(
        '[samples]\nevery_evals = 2\nprompts = ["To be", "The king"]\ntemperature = 0.7\ntop_k = 9'
    )
    plan = loads_plan(text)
    assert loads_plan(dump_plan(plan)) == plan


def test_samples_come_every_nth_evaluation_by_step_and_at_the_end() -> None:
    spec = SamplesSpec(every_evals=2)
    due = [s for s in range(1, 61) if samples_due(spec, 10, s, final=False)]
    assert due == [20, 40, 60]
    assert samples_due(spec, 10, 33, final=True)
    assert not samples_due(SamplesSpec(), 10, 20, final=True)  # off stays off
    assert not samples_due(spec, 0, 20, final=True)  # no evaluations, no samples


VALUES = st.one_of(
    st.integers(-(2**64), 2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.booleans(),
    st.lists(st.one_of(st.text(max_size=300), st.integers()), max_size=10),
)
KEYS = st.sampled_from(
    ["every_evals", "prompts", "max_new_tokens", "temperature", "top_k", "mask_predictions", "seed"]
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=4), st.sampled_from(["gpt2", "bert"]))
def test_any_samples_table_loads_or_says_one_line_about_a_samples_key(
    table: dict[str, object], family: str
) -> None:
    data = tomllib.loads(plan_text(family=family))
    data["samples"] = table
    found = dict_problems(data, "p.toml")
    problems = [p for p in found if p.key.startswith("samples")]
    assert problems == found
    if not problems:
        spec = plan_from_dict(data).samples
        assert 1 <= spec.max_new_tokens <= 256 and spec.temperature >= 0
        assert all(isinstance(p, str) and p.strip() for p in spec.prompts)
    for problem in problems:
        assert "\n" not in str(problem) and "; " in str(problem)


def test_a_plan_without_samples_reads_as_before_in_its_events() -> None:
    """The event's plan dict leaves [samples] out while it is off: a cockpit older than it
    reads the run's plan, and compare shows no samples rows between old and new runs."""
    from growcockpit.plan import plan_to_dict

    off = loads_plan(plan_text())
    assert "samples" not in plan_to_dict(off)
    assert plan_from_dict(plan_to_dict(off)) == off
    on = loads_plan(plan_text("[samples]\nevery_evals = 3"))
    assert plan_to_dict(on)["samples"]["every_evals"] == 3
    assert plan_from_dict(plan_to_dict(on)) == on
    assert "[samples]" in dump_plan(off)  # the run's own plan.toml still writes every key
