"""A plan without [model] is an error, not silently the default model.

Loading a plan to train or validate it requires the table (one line, exit 2,
before any run directory exists); decoding a plan that is only read (an
event's plan, an editor's draft: validate=False) does not ask.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from growcockpit.cli import main
from growcockpit.plan import PlanError, dict_problems, loads_plan, plan_from_dict, text_problems

NO_MODEL = 'name = "x"\n[optim]\nlr = 1e-3\n[[stages]]\nname = "a"\nlayers = 4\nsteps = 10\n'
WANT = 't.toml: [model]: missing; add [model] with family = "bert", "gpt2" or "llama" and its sizes'


def test_loading_without_model_is_one_error() -> None:
    with pytest.raises(PlanError) as info:
        loads_plan(NO_MODEL, "t.toml")
    assert str(info.value) == WANT
    with pytest.raises(PlanError) as info:
        plan_from_dict({"name": "x", "stages": [{"name": "a", "layers": 4, "steps": 10}]}, "t.toml")
    assert str(info.value) == WANT
    assert [str(e) for e in text_problems(NO_MODEL, "t.toml")] == [WANT]


def test_with_model_it_loads_and_decoding_does_not_ask() -> None:
    with_model = NO_MODEL.replace("[optim]", '[model]\nfamily = "gpt2"\n[optim]')
    assert loads_plan(with_model, "t.toml").model.family == "gpt2"
    draft = loads_plan(NO_MODEL, "t.toml", validate=False)
    assert draft.stages[0].name == "a"
    assert dict_problems({"name": "x", "model": {}, "stages": []}) != []  # still validated


def test_other_problems_still_come_first() -> None:
    text = NO_MODEL.replace('name = "a"', 'name = "a"\nbogus = 1')
    (only,) = text_problems(text, "t.toml")
    assert "bogus" in str(only)


@pytest.mark.heavy_deps  # the commands check the environment: the builtin corpus
@pytest.mark.parametrize("command", ["validate", "train"])
def test_cli_is_one_line_exit_2_and_no_run_dir(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "t.toml"
    plan.write_text(NO_MODEL)
    run_dir = tmp_path / "run"
    argv = ["plan", "validate", str(plan)]
    if command == "train":
        argv = ["train", str(plan), "--run-dir", str(run_dir)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[model]: missing" in err and str(plan) in err
    assert not run_dir.exists()
