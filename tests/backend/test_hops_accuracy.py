"""Exact-match accuracy in `eval` events: right on a model made to be right, equal to an
independent count over Hugging Face's own forward, and written by a real run on task:hops."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
import torch
from run_fixtures import make_trainer, warm_growcockpit

from growcockpit.backend.data.blocks import Batch, HopBlocks
from growcockpit.backend.loop.evaluation import eval_event, val_scores
from growcockpit.backend.loop.forward import StagedForward
from growcockpit.backend.model import build_model
from growcockpit.families.gpt2 import GPT2Spec
from growcockpit.plan import loads_plan
from growcockpit.protocol import read_all
from growcockpit.protocol.events import Eval

HOPS_PLAN = """
name = "hops-tiny"
seed = 0
[model]
family = "gpt2"
hidden_size = 32
num_heads = 2
intermediate_size = 8
max_seq_len = 24
final_layers = 2
[data]
source = "task:hops"
hops = 2
alphabet = 3
seq_len = 24
[optim]
lr = 3e-3
warmup_steps = 2
batch_size = 8
[metrics]
system_every_s = 0
eval_every_steps = 5
eval_batches = 2
[checkpoint]
every_steps = 0
[[stages]]
name = "one"
layers = 1
enter = "init"
steps = 6
[[stages]]
name = "two"
layers = 2
enter = "stack"
source = "top"
steps = 4
"""
NO_AUTOCAST = contextlib.nullcontext()


def _setup() -> tuple[torch.nn.Module, HopBlocks]:
    plan = loads_plan(HOPS_PLAN, "hops.toml")
    data = HopBlocks(plan.data, "gpt2", seed=3)
    torch.manual_seed(0)
    return build_model(plan.model, 2, data.tokenizer), data


def _oracle(
    monkeypatch: pytest.MonkeyPatch, vocab: int, wrong_every: int = 0
) -> dict[str, torch.Tensor]:
    """A stub model: its 'hidden state' is one-hot logits on the right answer for each
    position (read off the labels, shifted as the causal loss shifts them), every
    `wrong_every`-th labelled answer moved to another symbol; the head passes it through."""
    current: dict[str, torch.Tensor] = {}

    def hidden(self: StagedForward, model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
        labels = current["labels"]
        answer = torch.full_like(ids, -100)
        answer[:, :-1] = labels[:, 1:]  # position t is scored against label t + 1
        flat = answer.reshape(-1)
        if wrong_every:
            labelled = (flat != -100).nonzero().squeeze(1)
            hit = labelled[::wrong_every]
            flat[hit] = (flat[hit] + 1) % vocab
        out = torch.zeros(*ids.shape, vocab)
        rows = (flat != -100).nonzero().squeeze(1)
        out.view(-1, vocab)[rows, flat[rows]] = 30.0
        return out

    def head_logits(self: GPT2Spec, model: torch.nn.Module, h: torch.Tensor) -> torch.Tensor:
        return h

    monkeypatch.setattr(StagedForward, "hidden", hidden)
    monkeypatch.setattr(GPT2Spec, "head_logits", head_logits)
    return current


def _run(
    current: dict[str, torch.Tensor], model: torch.nn.Module, batches: list[Batch]
) -> tuple[float, float]:
    """Mean loss and accuracy over `batches`, scored one batch at a time (the stub reads
    the batch's labels)."""
    total_hits: list[float] = []
    losses: list[float] = []
    for b in batches:
        current["labels"] = b.labels
        scores = val_scores(model, [b], torch.device("cpu"), NO_AUTOCAST)
        assert scores is not None
        losses.append(scores[0])
        total_hits.append(scores[1] * int((b.labels != -100).sum()))
    count = sum(int((b.labels != -100).sum()) for b in batches)
    return sum(losses) / len(losses), sum(total_hits) / count


def test_a_model_made_to_be_right_scores_one(monkeypatch: pytest.MonkeyPatch) -> None:
    model, data = _setup()
    current = _oracle(monkeypatch, data.vocab_size)
    loss, accuracy = _run(current, model, data.val_batches(8, 2))
    assert accuracy == 1.0
    assert loss < 1e-6


def test_a_known_fraction_wrong_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    model, data = _setup()
    current = _oracle(monkeypatch, data.vocab_size, wrong_every=4)
    batch = data.val_batches(8, 1)[0]
    n = int((batch.labels != -100).sum())
    wrong = len(range(0, n, 4))
    _, accuracy = _run(current, model, [batch])
    assert wrong > 0 and accuracy == pytest.approx((n - wrong) / n)


def test_accuracy_equals_a_count_over_the_models_own_forward() -> None:
    """An untrained model: the product's staged forward and head, against HF's forward."""
    model, data = _setup()
    model.eval()
    batches = data.val_batches(8, 2)
    scores = val_scores(model, batches, torch.device("cpu"), NO_AUTOCAST)
    assert scores is not None
    hits = count = 0
    losses = []
    with torch.no_grad():
        for b in batches:
            logits = model(input_ids=b.input_ids).logits
            pred, target = logits[:, :-1].argmax(-1), b.labels[:, 1:]
            mask = target != -100
            hits += int((pred[mask] == target[mask]).sum())
            count += int(mask.sum())
            losses.append(
                float(torch.nn.functional.cross_entropy(logits[:, :-1][mask], target[mask]))
            )
    assert scores[1] == pytest.approx(hits / count)
    assert scores[0] == pytest.approx(sum(losses) / len(losses), rel=1e-4)
    event = eval_event(model, batches, torch.device("cpu"), NO_AUTOCAST, step=5, stage=0)
    assert event is not None and event.accuracy == pytest.approx(hits / count)


@pytest.mark.usefixtures("gc_cache")
@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_a_run_on_the_task_writes_accuracy_in_its_evals(tmp_path: Path, family: str) -> None:
    trainer = make_trainer(tmp_path, HOPS_PLAN.replace('family = "gpt2"', f'family = "{family}"'))
    assert trainer.run() == "completed"
    evals = [e for e in read_all(tmp_path / "events.jsonl") if isinstance(e, Eval)]
    assert [e.step for e in evals] == [5, 10]
    assert all(e.accuracy is not None and 0.0 <= e.accuracy <= 1.0 for e in evals)


@pytest.mark.usefixtures("gc_cache")
def test_growcockpit_train_runs_the_task_and_keeps_its_vocabulary(
    tmp_path: Path, gc_cache: Path
) -> None:
    """The CLI reads no corpus for a task source, and the run keeps the fixed vocabulary."""
    plan = tmp_path / "hops.toml"
    plan.write_text(HOPS_PLAN)
    run_dir = tmp_path / "run"
    done = warm_growcockpit(
        "train", str(plan), "--device", "cpu", "--run-dir", str(run_dir), cache=gc_cache
    )
    assert done.returncode == 0, done.stderr[-600:]
    evals = [e for e in read_all(run_dir / "events.jsonl") if isinstance(e, Eval)]
    assert evals and all(e.accuracy is not None for e in evals)
    saved = json.loads((run_dir / "tokenizer" / "tokenizer.json").read_text())
    assert set(saved["model"]["vocab"]) == {"a", "b", "c", "<|endoftext|>"}
