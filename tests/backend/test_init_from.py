"""`model.init_from`: a second plan grows the trained model of a first one (bert2BERT scenario)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from transformers import BertForMaskedLM

from growcockpit.backend.data.blocks import load_blocks
from growcockpit.backend.loop.forward import StagedForward
from growcockpit.backend.run import run_training
from growcockpit.backend.state.init_from import data_spec_for
from growcockpit.plan import PlanError, dump_plan, loads_plan, plan_problems
from growcockpit.plan.environment import check_environment
from growcockpit.plan.init_from import grow_plan_from
from growcockpit.protocol import read_all
from growcockpit.protocol.events import Grow, RunFinished, StageStarted, Step

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("gc_cache")]

SOURCE = """
name = "source"
[model]
family = "bert"
hidden_size = 32
num_heads = 2
intermediate_size = 64
max_seq_len = 64
final_layers = 2
dropout = 0.0
[data]
tokenizer = "train:2000"
seq_len = 64
[optim]
batch_size = 4
lr = 1e-3
[metrics]
system_every_s = 0
[[stages]]
name = "only"
layers = 2
steps = 6
"""

GROWN = """
name = "grown"
[model]
family = "bert"
hidden_size = 32
num_heads = 2
intermediate_size = 64
max_seq_len = 64
final_layers = 4
dropout = 0.0
init_from = "{final}"
[data]
tokenizer = "train:2000"
seq_len = 64
[optim]
batch_size = 4
lr = 1e-3
[metrics]
system_every_s = 0
[[stages]]
name = "from-2"
layers = 2
steps = 2
[[stages]]
name = "grow-4"
layers = 4
enter = "stack"
train = "new"
steps = 2
"""


def _train(text: str, run_dir: Path) -> list[object]:
    plan = loads_plan(text, "test.toml")
    assert run_training(plan, text, run_dir, device="cpu") == 0
    return read_all(run_dir / "events.jsonl")


@pytest.fixture(scope="module")
def source_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("runs") / "source"
    events = _train(SOURCE, run)
    assert any(isinstance(e, RunFinished) and e.status == "completed" for e in events)
    return run


def test_a_trained_model_is_grown_from_exactly_where_it_ended(
    source_run: Path, tmp_path: Path
) -> None:
    final = source_run / "final"
    text = GROWN.format(final=final)
    events = _train(text, tmp_path / "grown")

    plan = loads_plan(text)
    data = load_blocks(data_spec_for(plan), "bert", plan.seed)
    source = BertForMaskedLM.from_pretrained(final, attn_implementation="sdpa")
    source.eval()
    with torch.no_grad():
        expected = float(StagedForward(0, True).loss(source, data.train_batch(0, 4)))
    steps = [e for e in events if isinstance(e, Step)]
    assert steps[0].loss == pytest.approx(expected, rel=1e-5, abs=1e-6)
    # the source's tokenizer came along: the same ids, not a retrained vocabulary
    assert json.loads((tmp_path / "grown" / "tokenizer" / "tokenizer.json").read_text()) == (
        json.loads((final / "tokenizer.json").read_text())
    )
    grows = [e for e in events if isinstance(e, Grow)]
    assert [(g.from_layers, g.to_layers) for g in grows] == [(2, 4)]
    assert [e.layers for e in events if isinstance(e, StageStarted)] == [2, 4]
    grown = BertForMaskedLM.from_pretrained(tmp_path / "grown" / "final")
    assert grown.config.num_hidden_layers == 4


def test_a_shape_mismatch_is_one_line_naming_it(source_run: Path) -> None:
    text = re.sub(r"^layers = 2$", "layers = 3", GROWN, count=1, flags=re.M)
    text = text.format(final=source_run / "final").replace("hidden_size = 32", "hidden_size = 64")
    plan = loads_plan(text, validate=False)
    found = plan_problems(plan, environment=check_environment(plan))  # init_from is on disk
    problems = {e.key: e.problem for e in found}
    assert problems["stages[0].layers"].startswith("3 but the init_from model has 2 layers")
    assert problems["model.hidden_size"] == (
        "64 but the init_from model has 32; set model.hidden_size = 32"
    )
    with pytest.raises(PlanError) as err:
        loads_plan(
            GROWN.format(final=source_run / "nowhere"), "grown.toml", environment=check_environment
        )
    assert "model.init_from" in str(err.value) and "no such directory" in str(err.value)
    assert "\n" not in str(err.value)


def test_grow_this_plan_is_valid_and_starts_from_the_run(source_run: Path) -> None:
    run_plan = loads_plan(SOURCE)
    plan = grow_plan_from(run_plan, str(source_run / "final"), "source")
    assert plan_problems(plan, environment=check_environment(plan)) == []
    assert plan.model.init_from == str(source_run / "final")
    assert [(s.enter, s.layers) for s in plan.stages] == [
        ("init", 2),
        ("stack", 4),
        ("continue", 4),
    ]
    again = loads_plan(dump_plan(plan))
    assert again.model.init_from == plan.model.init_from


def test_a_run_resumes_after_its_init_from_source_is_gone(
    source_run: Path, tmp_path: Path, gc_cache: Path
) -> None:
    """The checkpoint holds the weights: moving or cleaning up the source must not strand
    the run (`resume` once failed on the plan's init_from check and on loading it)."""
    import shutil

    from run_fixtures import growcockpit

    source = tmp_path / "source-final"
    shutil.copytree(source_run / "final", source)
    run = tmp_path / "grown"
    _train(GROWN.format(final=source), run)
    assert (run / "checkpoints" / "step-2").is_dir()
    shutil.rmtree(source)

    res = growcockpit("resume", str(run), "--from", "step-2", "--force", cache=gc_cache)
    assert res.returncode == 0, res.stderr
    events = read_all(run / "events.jsonl")
    assert isinstance(events[-1], RunFinished) and events[-1].status == "completed"
    assert [e.step for e in events[-4:] if isinstance(e, Step)][-1] == 4


def test_what_was_loaded_is_said_in_an_event_the_log_and_plan_show(
    source_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from growcockpit.cli import main
    from growcockpit.protocol.events import ModelLoaded

    final = source_run / "final"
    text = GROWN.format(final=final)
    events = _train(text, tmp_path / "grown")
    [loaded] = [e for e in events if isinstance(e, ModelLoaded)]
    source = BertForMaskedLM.from_pretrained(final, attn_implementation="sdpa")
    assert (loaded.path, loaded.family, loaded.layers) == (str(final), "bert", 2)
    assert loaded.parameters == sum(p.numel() for p in source.parameters())
    plan = loads_plan(text)
    data = load_blocks(data_spec_for(plan), "bert", plan.seed)
    source.eval()
    with torch.no_grad():
        first_val = float(StagedForward(0, True).loss(source, data.val_batches(4, 1)[0]))
    assert loaded.val_loss == pytest.approx(first_val, rel=1e-5)
    assert f"loaded {final}: bert, 2 layers" in capsys.readouterr().out

    (tmp_path / "grown.toml").write_text(text)
    assert main(["plan", "show", str(tmp_path / "grown.toml")]) == 0
    shown = capsys.readouterr().out
    assert f"init_from {final}" in shown
    assert f"tokenizer {final} (the init_from model's own; the plan says train:2000)" in shown


def test_every_mismatch_is_listed_at_once_at_launch_too(source_run: Path) -> None:
    from growcockpit.backend.data.corpus import DataError
    from growcockpit.backend.state.init_from import initial_model

    text = re.sub(r"^layers = 2$", "layers = 3", GROWN, count=1, flags=re.M)
    text = text.format(final=source_run / "final").replace("hidden_size = 32", "hidden_size = 64")
    plan = loads_plan(text, validate=False)
    with pytest.raises(DataError) as err:
        initial_model(plan, None)  # type: ignore[arg-type]
    assert "model.hidden_size" in str(err.value) and "stages[0].layers" in str(err.value)
