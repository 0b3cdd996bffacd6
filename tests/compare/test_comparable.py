"""Runs that measure another loss are never given a ratio against each other."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from ui_fixtures import write_events

from growcockpit.cli import main as cli_main
from growcockpit.compare import fold_events, verdict
from growcockpit.compare.comparable import mismatches
from growcockpit.protocol.events import Eval, Event, RunFinished, RunStarted, StageStarted, Step

BERT: dict[str, Any] = {
    "name": "bert-baseline",
    "model": {"family": "bert", "hidden_size": 64, "num_heads": 4, "intermediate_size": 256,
              "max_seq_len": 32, "final_layers": 4},
    "data": {"source": "builtin", "tokenizer": "train:1000", "seq_len": 32, "val_fraction": 0.01},
    "optim": {"batch_size": 4},
    "metrics": {"eval_batches": 4},
    "stages": [{"name": "full", "layers": 4, "enter": "init", "train": "all", "steps": 100}],
}  # fmt: skip


def _with(**changes: Any) -> dict[str, Any]:
    plan = copy.deepcopy(BERT)
    for dotted, value in changes.items():
        section, key = dotted.split("__")
        plan[section][key] = value
    return plan


def _events(plan: dict[str, Any], slope: float) -> list[Event]:
    evs: list[Event] = [RunStarted(run_id="r", plan=plan)]
    evs.append(StageStarted(index=0, layers=4, trainable_layers=[0, 1, 2, 3], steps=100))
    for step in range(1, 101):
        evs.append(Step(step=step, stage=0, loss=1.0, tokens=128 * step, step_ms=100.0))
        if step % 10 == 0:
            evs.append(Eval(step=step, stage=0, val_loss=10.0 - slope * step))
    evs.append(RunFinished(status="completed", step=100))
    return evs


@pytest.mark.parametrize(
    ("changes", "what"),
    [
        ({"model__family": "llama"}, "family"),
        ({"data__tokenizer": "/tokenizers/gpt2"}, "tokenizer"),
        ({"data__tokenizer": "train:4000"}, "vocab"),
        ({"data__source": "corpus/*.txt"}, "data source"),
        ({"data__val_fraction": 0.05}, "validation split"),
        ({"data__seq_len": 64}, "sequence length"),
    ],
)
def test_a_run_measuring_another_loss_gets_no_ratio(changes: dict[str, Any], what: str) -> None:
    base = fold_events("bert-baseline", _events(BERT, 0.03))
    other = fold_events("other", _events(_with(**changes), 0.08))
    v = verdict(other, base)
    assert v.speedup_wall is None and v.speedup_flops is None and v.reach is None
    assert v.text.startswith("not comparable with bert-baseline (") and what in v.text
    assert "sooner" not in v.text


def test_same_measurement_other_recipe_is_compared() -> None:
    """Depth, width, LR, stages and seed change what is trained, not what is measured."""
    plan = _with(model__final_layers=8, model__hidden_size=128)
    plan["optim"]["lr"] = 3e-3
    plan["seed"] = 4
    assert mismatches(plan, BERT) == []
    v = verdict(fold_events("x", _events(plan, 0.08)), fold_events("b", _events(BERT, 0.03)))
    assert v.speedup_wall is not None and "sooner" in v.text


def test_facts_a_plan_does_not_state_are_not_held_against_it() -> None:
    assert mismatches({"name": "old"}, BERT) == []
    assert [m.what for m in mismatches(_with(data__tokenizer="gpt2"), BERT)] == ["tokenizer"]


def test_cli_compare_flags_a_llama_run_against_a_bert_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The case seen: compare said a Llama run "reaches the BERT baseline's loss 8.3× sooner"."""
    for name, plan, slope in (("bert", BERT, 0.03), ("llama", _with(model__family="llama"), 0.08)):
        (tmp_path / name).mkdir()
        write_events(tmp_path / name / "events.jsonl", _events(plan, slope))
    assert cli_main(["compare", str(tmp_path / "bert"), str(tmp_path / "llama")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("llama"))
    assert "not comparable with bert (family llama vs bert)" in line and "sooner" not in line
