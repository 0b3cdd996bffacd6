"""`[samples]` in a real run: a tiny BERT and a tiny GPT-2 write text at their evaluations."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from run_fixtures import make_trainer, tiny_plan

from growcockpit.backend.loop.samples import full_logits, write_samples
from growcockpit.plan.samples import DEFAULT_PROMPTS
from growcockpit.protocol import read_all
from growcockpit.protocol.events import Eval
from growcockpit.protocol.samples_event import Samples

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("gc_cache")]


def _with_samples(text: str, table: str, family: str = "bert") -> str:
    text = text.replace('family = "bert"', f'family = "{family}"')
    return text.replace("[[stages]]", f"[samples]\n{table}\n\n[[stages]]", 1)


def _samples(run_dir: Path) -> list[Samples]:
    return [e for e in read_all(run_dir / "events.jsonl") if isinstance(e, Samples)]


def test_a_bert_run_fills_masks_at_every_evaluation(tmp_path: Path) -> None:
    text = _with_samples(tiny_plan(steps=(20, 13)), "every_evals = 1\nmask_predictions = 3")
    trainer = make_trainer(tmp_path, text)
    assert trainer.run() == "completed"
    evals = [e.step for e in read_all(tmp_path / "events.jsonl") if isinstance(e, Eval)]
    found = _samples(tmp_path)
    assert [s.step for s in found] == evals == [10, 20, 30, 33]
    assert [s.stage for s in found] == [0, 0, 1, 1]
    for event in found:
        assert event.kind == "masked"
        assert [s.prompt for s in event.samples] == list(DEFAULT_PROMPTS["masked"])
        for sample in event.samples:
            assert len(sample.top_tokens) == sample.prompt.count("[MASK]")
            assert all(len(row) == 3 for row in sample.top_tokens)
            assert all(row == sorted(row, reverse=True) for row in sample.top_probs)
            assert "[MASK]" not in sample.text
            assert sample.top_tokens[0][0] in sample.text


def test_a_gpt2_run_samples_every_second_evaluation_and_at_the_end(tmp_path: Path) -> None:
    table = 'every_evals = 2\nprompts = ["To be", "The king"]\nmax_new_tokens = 6'
    table += "\ntemperature = 0.9\ntop_k = 20\nseed = 7"
    trainer = make_trainer(tmp_path, _with_samples(tiny_plan(steps=(20, 13)), table, "gpt2"))
    assert trainer.run() == "completed"
    found = _samples(tmp_path)
    assert [s.step for s in found] == [20, 33]  # evaluations 2 and 3 of 10, 20, 30; the final
    assert [s.stage for s in found] == [0, 1]
    for event in found:
        assert event.kind == "causal" and event.temperature == 0.9 and event.seed == 7
        assert [s.prompt for s in event.samples] == ["To be", "The king"]
        assert all(s.text for s in event.samples)
        assert all(s.top_tokens == [] for s in event.samples)
    # deterministic for the seed: the same model writes the same text again
    again = write_samples(
        trainer.model,
        trainer.data.tokenizer,
        trainer.plan,
        torch.device("cpu"),
        trainer.steps.autocast(),
        33,
        1,
    )
    assert again.samples == found[-1].samples


def test_samples_run_every_layer_of_a_staged_model(tmp_path: Path) -> None:
    """The second stage trains only the new top layers (a frozen bottom, no embedding
    grads): the samples' logits are still the whole 4-layer model's."""
    trainer = make_trainer(tmp_path, _with_samples(tiny_plan(steps=(4, 3)), "", "gpt2"))
    trainer.run()
    model = trainer.model.eval()
    ids = torch.tensor([[5, 9, 14, 2, 7]])
    with torch.no_grad():
        assert len(model.transformer.h) == 4
        torch.testing.assert_close(full_logits(model, ids), model(ids).logits)


def test_samples_are_off_by_default(tmp_path: Path) -> None:
    trainer = make_trainer(tmp_path, tiny_plan(steps=(10, 3)))
    trainer.run()
    assert _samples(tmp_path) == []


def test_the_mirrors_show_samples_as_text() -> None:
    from growcockpit.export.records import Recorder
    from growcockpit.protocol.samples_event import SampleText

    causal = Samples(step=20, samples=[SampleText(prompt="To be", text=", or not")])
    masked = Samples(
        step=30,
        kind="masked",
        samples=[
            SampleText(
                prompt="The [MASK].",
                text="The king.",
                top_tokens=[["king", "man"]],
                top_probs=[[0.5, 0.25]],
            )
        ],
    )
    recorder = Recorder()
    first, second = recorder.record(causal), recorder.record(masked)
    assert first is not None and first.step == 20
    assert first.texts == {"samples": "**To be**, or not"}
    assert second is not None and second.texts == {"samples": "The king. (king 50%, man 25%)"}


def test_samples_leave_training_as_it_was(tmp_path: Path) -> None:
    """Sampling draws from its own generator and runs in eval mode: the losses of a run with
    samples on are those of the same run without them."""
    plain = tiny_plan(steps=(10, 12)).replace('family = "bert"', 'family = "gpt2"')
    table = "every_evals = 1\ntemperature = 1.0\nmax_new_tokens = 4"
    losses = []
    for name, text in (("off", plain), ("on", _with_samples(plain, table))):
        make_trainer(tmp_path / name, text).run()
        events = read_all(tmp_path / name / "events.jsonl")
        losses.append([(e.step, e.loss) for e in events if type(e).__name__ == "Step"])
    assert _samples(tmp_path / "off") == [] and len(_samples(tmp_path / "on")) == 3
    assert losses[0] == losses[1] and len(losses[0]) == 22


def test_a_llama_run_continues_its_prompts_through_the_rotary_blocks(tmp_path: Path) -> None:
    """Llama's blocks take rotary embeddings (its `block_call`); the grown middle-stacked
    model's samples are the whole model's logits, as its own forward computes them."""
    text = (Path(__file__).parents[1] / "plans" / "tiny-llama.toml").read_text()
    text = text.replace("steps = 10\n", "steps = 5\n").replace(
        "eval_every_steps = 10", "eval_every_steps = 5"
    )
    trainer = make_trainer(
        tmp_path, _with_samples(text, "every_evals = 1\nmax_new_tokens = 5", "llama")
    )
    assert trainer.run() == "completed"
    found = _samples(tmp_path)
    assert [(s.step, s.stage, s.kind) for s in found] == [(5, 0, "causal"), (10, 1, "causal")]
    assert all(s.text for s in found[-1].samples)
    model = trainer.model.eval()
    ids = torch.tensor([[5, 9, 14, 2, 7]])
    with torch.no_grad():
        torch.testing.assert_close(full_logits(model, ids), model(ids).logits)


def test_a_headless_run_prints_its_samples() -> None:
    from growcockpit.backend.control.sinks import console_line
    from growcockpit.protocol.samples_event import SampleText

    causal = Samples(step=20, samples=[SampleText(prompt="To be", text=",\nor \x1b[2Jnot")])
    assert console_line(causal, 10) == "   samples step 20:\n     To be ▸, or \\x1b[2Jnot"
    masked = Samples(
        step=30,
        kind="masked",
        samples=[
            SampleText(
                prompt="The [MASK].", text="The king.", top_tokens=[["king"]], top_probs=[[0.5]]
            )
        ],
    )
    assert console_line(masked, 10) == "   samples step 30:\n     The king. (king 50%)"
