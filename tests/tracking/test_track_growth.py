"""A Hugging Face Trainer run grown 2 → 4 layers by `GrowthCallback`, saved and reloaded."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from hf_fixtures import tiny_trainer
from run_fixtures import of_type
from transformers import GPT2LMHeadModel

import growcockpit
from growcockpit.plan import loads_plan
from growcockpit.protocol import read_all
from growcockpit.protocol.events import Grow, LayerStats, RunFinished, StageStarted, Step

pytestmark = pytest.mark.slow

PLAN = """
name = "hf-grow"
[model]
family = "gpt2"
hidden_size = 32
num_heads = 2
intermediate_size = 128
max_seq_len = 32
final_layers = 4

[[stages]]
name = "two"
layers = 2
enter = "init"
steps = 4

[[stages]]
name = "four"
layers = 4
enter = "stack"
source = "{source}"
init = "{init}"
train = "{train}"
steps = 4
"""


@pytest.mark.parametrize(
    ("source", "init", "train"),
    [("top", "zero", "all"), ("bottom", "copy", "new"), ("random", "copy", "all")],
)
def test_a_trainer_run_grown_from_2_to_4_layers_saves_a_4_layer_model(
    tmp_path: Path, source: str, init: str, train: str
) -> None:
    plan = tmp_path / "grow.toml"
    plan.write_text(PLAN.format(source=source, init=init, train=train))
    run = tmp_path / "runs" / "grow"
    callback = growcockpit.GrowthCallback(run, plan=plan)
    trainer = tiny_trainer(tmp_path / "out", [callback], max_steps=8)
    embedding_before = trainer.model.transformer.wte.weight.detach().clone()
    trainer.train()
    model = trainer.model
    assert len(model.transformer.h) == 4 and model.config.n_layer == 4
    new_ids = [2, 3]
    optimized = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert all(id(p) in optimized for i in new_ids for p in model.transformer.h[i].parameters())
    if init == "zero":  # zeroed projections were trained away from zero by the Trainer
        assert model.transformer.h[3].attn.c_proj.weight.abs().sum() > 0
    if train == "new":  # the old blocks and embeddings froze at the growth
        assert not model.transformer.h[0].attn.c_attn.weight.requires_grad
        assert model.transformer.h[3].attn.c_attn.weight.requires_grad
    else:
        assert not torch.equal(model.transformer.wte.weight, embedding_before)

    final = tmp_path / "final"
    trainer.save_model(str(final))
    loaded = GPT2LMHeadModel.from_pretrained(final)
    assert loaded.config.n_layer == 4 and len(loaded.transformer.h) == 4
    ids = torch.randint(0, 64, (1, 8))
    model.eval()
    assert torch.allclose(loaded(ids).logits, model(ids).logits, atol=1e-5)

    events = read_all(run / "events.jsonl")
    assert [(s.index, s.layers, s.step) for s in of_type(events, StageStarted)] == [
        (0, 2, 0),
        (1, 4, 4),
    ]
    grow = of_type(events, Grow)[0]
    assert (grow.from_layers, grow.to_layers, grow.step) == (2, 4, 4)
    assert [s.stage for s in of_type(events, Step)] == [0] * 4 + [1] * 4
    assert of_type(events, RunFinished)[-1].status == "completed"


@pytest.mark.parametrize(
    ("change", "named"),
    [({"enter": "coalesce", "width": 16}, "enter"), ({"advance": "manual"}, "advance")],
)
def test_a_stage_only_the_engine_runs_is_refused_naming_it(
    change: dict[str, object], named: str
) -> None:
    plan = loads_plan(PLAN.format(source="top", init="copy", train="all"))
    plan.stages[1] = dataclasses.replace(plan.stages[1], **change)  # type: ignore[arg-type]
    with pytest.raises(growcockpit.GrowthError, match=f"stages\\[1\\].*{named}.*growcockpit train"):
        growcockpit.GrowthCallback("unused", plan=plan)


def test_the_step_after_a_growth_times_every_block_of_the_grown_model(tmp_path: Path) -> None:
    plan = tmp_path / "grow.toml"
    text = PLAN.format(source="top", init="zero", train="all")
    plan.write_text(text.replace("steps = 4", "steps = 9", 1))  # grown at 9, timed at 10
    run = tmp_path / "runs" / "timed"
    trainer = tiny_trainer(
        tmp_path / "out", [growcockpit.GrowthCallback(run, plan=plan)], max_steps=13
    )
    trainer.train()
    stats = {s.step: s for s in of_type(read_all(run / "events.jsonl"), LayerStats)}
    assert [layer.id for layer in stats[10].layers] == [0, 1, 2, 3]
    assert all(layer.fwd_ms is not None for layer in stats[10].layers)
