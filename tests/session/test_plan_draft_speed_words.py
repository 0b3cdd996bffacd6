"""The designer's cost line says "as fast" for a plan that costs what its baseline does
(it read "1.00× faster"), and keeps "N× faster" / "N× slower" otherwise."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from repo_paths import REPO, TINY_TOML

from growcockpit.plan import loads_plan
from growcockpit.session.plan_drafts import estimate
from growcockpit.text.wording import speed_word

ONE_STAGE = """
name = "flat"
[model]
family = "gpt2"
hidden_size = 32
num_heads = 2
intermediate_size = 64
max_seq_len = 32
final_layers = 2
[data]
source = "builtin"
tokenizer = "train:300"
[[stages]]
name = "all"
layers = 2
steps = 40
"""


def test_a_plan_that_is_its_own_baseline_is_as_fast() -> None:
    cost, line = estimate(loads_plan(ONE_STAGE, "flat.toml"))
    assert cost is not None and line.endswith(": as fast"), line
    assert "1.00× faster" not in line


def test_a_grown_plan_still_says_how_much_faster() -> None:
    _, line = estimate(loads_plan(TINY_TOML.read_text(), "tiny.toml"))
    assert "× faster" in line and "as fast" not in line


@given(st.floats(min_value=0.01, max_value=100.0))
def test_speed_words_never_say_one_times(speedup: float) -> None:
    words = speed_word(speedup)
    assert "1.00×" not in words
    assert words == "as fast" or ("faster" in words) == (speedup > 1)


def test_a_task_plan_names_its_fixed_vocabulary_not_a_tokenizer() -> None:
    """The designer's header said `tokenizer train:8000` for a task:hops plan, which
    trains no tokenizer: it now says what `plan show` says."""
    from growcockpit.plan import load_plan
    from growcockpit.session.plan_drafts import plan_summary

    hops = plan_summary(load_plan(REPO / "sample_plans" / "cpu-hops-baseline.toml"))
    assert "task:hops · k 4, alphabet 4, fixed vocabulary 5 ·" in hops
    assert "tokenizer" not in hops
    text = plan_summary(load_plan(REPO / "sample_plans" / "cpu-demo.toml"))
    assert "tokenizer " in text
