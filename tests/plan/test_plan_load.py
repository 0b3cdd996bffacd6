"""Plan files: loading, strict conversion, round trips, saving."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from growcockpit.plan import (
    PlanError,
    dump_plan,
    estimate_cost,
    format_plan,
    load_plan,
    loads_plan,
    parse_stages,
    plan_from_dict,
    plan_to_dict,
    save_plan,
    text_problems,
)
from growcockpit.resources import sample_plans_dir

HEAD = """\
name = "t"

[model]
family = "bert"
hidden_size = 128
num_heads = 4
intermediate_size = 512
max_seq_len = 128
final_layers = 4
"""

VCYCLE = (
    HEAD
    + """
[optim]
lr = 1          # an int where a float is expected is fine

[[stages]]
name = "warm"
layers = 4
steps = 10

[[stages]]
name = "coarse"
enter = "coalesce"
layers = 2
pairing = "half"
lr = 4e-4
steps = 20
advance = "manual"

[[stages]]
name = "fine"
enter = "interpolate"
layers = 4
pairing = "half"   # the coalesce's
alpha = 0.25
train = "top:2"
embeddings = "frozen"
head = "frozen"
warmup_steps = 5
steps = 20
"""
)


def marked_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if "# <-" in line)


def test_load_converts_and_defaults() -> None:
    plan = loads_plan(VCYCLE)
    assert plan.name == "t"
    assert plan.optim.lr == 1.0 and isinstance(plan.optim.lr, float)
    assert plan.stages[0].enter == "init"  # omitted on the first stage
    assert plan.stages[1].width is None and plan.stages[1].pairing == "half"
    assert plan.stages[2].alpha == 0.25 and plan.stages[2].embeddings == "frozen"
    assert plan.total_steps == 50


def test_round_trip_text_and_dict() -> None:
    plan = loads_plan(VCYCLE)
    assert loads_plan(dump_plan(plan)) == plan
    data = plan_to_dict(plan)
    json.dumps(data)  # JSON-able
    assert "alpha" not in data["stages"][0]  # None values are left out
    assert plan_from_dict(json.loads(json.dumps(data))) == plan


def test_dump_is_readable() -> None:
    text = dump_plan(loads_plan(VCYCLE))
    assert text.count("[[stages]]") == 3
    assert 'enter = "init"' in text and 'pairing = "half"' in text
    assert "alpha" in text and "width" not in text


def test_save_plan_atomic(tmp_path: Path) -> None:
    plan = loads_plan(VCYCLE)
    path = tmp_path / "p.toml"
    save_plan(plan, path)
    assert load_plan(path) == plan
    plan.stages[1].steps = 99
    save_plan(plan, path)
    assert load_plan(path).stages[1].steps == 99
    assert [p.name for p in tmp_path.iterdir()] == ["p.toml"]  # no temp files left


def test_save_plan_keeps_comments(tmp_path: Path) -> None:
    original = (sample_plans_dir() / "cpu-demo.toml").read_text()
    plan = loads_plan(original)
    plan.optim.lr = 1e-3
    plan.stages[1].steps = 200
    plan.stages[1].alpha = None
    path = tmp_path / "p.toml"
    save_plan(plan, path, original_text=original)
    text = path.read_text()
    assert "# post-LN BERT" in text and "# copy the current top 2 layers" in text
    assert load_plan(path) == plan


def test_save_plan_keeps_comments_when_stages_change(tmp_path: Path) -> None:
    original = (sample_plans_dir() / "cpu-demo.toml").read_text()
    plan = loads_plan(original)
    plan.stages.insert(2, plan.stages[2].__class__(name="extra", layers=4, steps=5, train="top:1"))
    path = tmp_path / "p.toml"
    save_plan(plan, path, original_text=original)
    assert "# CPU demo" in path.read_text()
    assert load_plan(path) == plan
    plan.stages = plan.stages[:2] + plan.stages[3:]
    save_plan(plan, path, original_text=path.read_text())
    assert load_plan(path) == plan


def test_file_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(PlanError) as info:
        load_plan(missing)
    assert str(info.value).startswith(f"{missing}: file not found")
    assert info.value.line is None


def test_toml_syntax_error_has_line(tmp_path: Path) -> None:
    text = HEAD + '\n[[stages]]\nname = "a"\nlayers = = 4  # <-\nsteps = 1\n'
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(PlanError) as info:
        load_plan(path)
    assert info.value.line == marked_line(text)
    assert str(info.value).startswith(f"{path}:{marked_line(text)}: TOML syntax error")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("snippet", "key", "needle"),
    [
        ('layers = "4"  # <-', "stages[0].layers", "expected an integer"),
        ("layers = true  # <-", "stages[0].layers", "expected an integer"),
        ("layers = 4.0  # <-", "stages[0].layers", "write 4"),
        ("layers = 4\nalpha = true  # <-", "stages[0].alpha", "expected a number"),
        ("layers = 4\nstpes = 3  # <-", "stages[0].stpes", 'did you mean "steps"'),
        ("layers = 4\nhead = 1  # <-", "stages[0].head", "expected a string"),
    ],
)
def test_conversion_errors(snippet: str, key: str, needle: str) -> None:
    text = HEAD + f'\n[[stages]]\nname = "a"\nsteps = 1\n{snippet}\n'
    with pytest.raises(PlanError) as info:
        loads_plan(text, source="p.toml")
    err = info.value
    assert str(err).startswith(f"p.toml:{marked_line(text)}: {key}: "), str(err)
    assert needle in str(err)
    assert (err.key, err.line, err.source) == (key, marked_line(text), "p.toml")


def test_section_not_a_table() -> None:
    with pytest.raises(PlanError, match=r"^<string>:1: model: expected a table"):
        loads_plan('model = 3\nname = "x"\n[[stages]]\nname="a"\nlayers=4\nsteps=1\n')


def test_text_problems_lists_all() -> None:
    text = "bogus = 1\n" + HEAD + '\n[[stages]]\nname = "a"\nlayers = 4\n'
    problems = text_problems(text, source="p.toml")
    assert [(p.key, p.line) for p in problems] == [("bogus", 1), ("stages[0].steps", 12)]
    assert text_problems(VCYCLE) == []


def test_parse_stages() -> None:
    stages = parse_stages([{"name": "x", "layers": 4, "steps": 3}], start_index=2)
    assert stages[0].enter == "continue"
    with pytest.raises(PlanError, match=r"^<edit_stages>: stages\[2\]\.stepz: unknown key"):
        parse_stages([{"name": "x", "layers": 4, "stepz": 3}], start_index=2)
    with pytest.raises(PlanError, match=r"stages\[0\]\.steps: missing required key"):
        parse_stages([{"name": "x", "layers": 4}])


def test_plan_package_imports_no_heavy_modules() -> None:
    code = (
        "import sys, growcockpit.plan; "
        "bad = [m for m in ('torch', 'transformers', 'textual') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


SAMPLES = sorted(sample_plans_dir().glob("*.toml"))


def test_there_are_sample_plans() -> None:
    assert SAMPLES


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_sample_plan_loads(path: Path) -> None:
    plan = load_plan(path)
    assert loads_plan(dump_plan(plan)) == plan
    assert 0 < estimate_cost(plan).ratio <= 1.0 + 1e-9
    assert plan.name in format_plan(plan)


def test_seq_len_defaults_to_a_short_max_seq_len(tmp_path: Path) -> None:
    # a plan that only sets max_seq_len = 32 was rejected (seq_len 128 > 32)
    text = HEAD.replace("max_seq_len = 128", "max_seq_len = 32") + (
        '\n[[stages]]\nname = "all"\nlayers = 4\nsteps = 10\n'
    )
    plan = loads_plan(text)
    assert plan.data.seq_len == 32
    assert (
        loads_plan(HEAD + '\n[[stages]]\nname = "a"\nlayers = 4\nsteps = 1\n').data.seq_len == 128
    )

    def with_seq_len(n: int) -> str:
        return text.replace("\n[[stages]]", f"\n[data]\nseq_len = {n}\n\n[[stages]]", 1)

    assert loads_plan(with_seq_len(16)).data.seq_len == 16  # as written
    with pytest.raises(PlanError, match="longer than model.max_seq_len"):
        loads_plan(with_seq_len(64))  # a written seq_len longer than max_seq_len stays an error
    path = tmp_path / "p.toml"
    save_plan(plan, path, original_text=text)
    assert load_plan(path) == plan
