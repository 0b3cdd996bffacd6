"""A Llama-style decoder trained, grown, saved and grown again, for real on CPU.

Judged by what a user sees: the event log, checkpoints, and a `final/` that
transformers loads and generates with.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from repo_paths import TESTS
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    pipeline,
)

from growcockpit.backend.data.blocks import load_blocks
from growcockpit.backend.loop.forward import StagedForward
from growcockpit.backend.run import run_training
from growcockpit.backend.state.init_from import data_spec_for
from growcockpit.plan import loads_plan
from growcockpit.protocol import read_all
from growcockpit.protocol.events import Grow, RunFinished, StageStarted, Step

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("gc_cache")]

TINY_LLAMA = TESTS / "plans" / "tiny-llama.toml"


def _train(text: str, run_dir: Path) -> list[object]:
    plan = loads_plan(text, "test.toml")
    assert run_training(plan, text, run_dir, device="cpu") == 0
    return read_all(run_dir / "events.jsonl")


@pytest.fixture(scope="module")
def llama_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("runs") / "tiny-llama"
    events = _train(TINY_LLAMA.read_text(), run)
    assert any(isinstance(e, RunFinished) and e.status == "completed" for e in events)
    return run


def test_identity_blocks_keep_the_loss_and_only_new_layers_train(llama_run: Path) -> None:
    events = read_all(llama_run / "events.jsonl")
    grows = [e for e in events if isinstance(e, Grow)]
    assert len(grows) == 1 and (grows[0].from_layers, grows[0].to_layers) == (3, 4)
    assert grows[0].loss_before is not None and grows[0].loss_after is not None
    assert abs(grows[0].loss_after - grows[0].loss_before) <= 1e-5
    stages = [e for e in events if isinstance(e, StageStarted)]
    assert [(s.layers, s.trainable_layers) for s in stages] == [(3, [0, 1, 2]), (4, [2])]
    before = torch.load(llama_run / "checkpoints" / "step-10" / "state.pt", weights_only=False)
    after = AutoModelForCausalLM.from_pretrained(llama_run / "final").state_dict()
    # middle stacking copies block 1 in after itself: old 2 moves to 3; frozen, bitwise unchanged
    for old, new in ((0, 0), (1, 1), (2, 3)):
        for key, value in before["model"].items():
            prefix = f"model.layers.{old}."
            if key.startswith(prefix):
                moved = f"model.layers.{new}." + key[len(prefix) :]
                assert torch.equal(value, after[moved]), f"{moved} changed while frozen"
    losses = [e.loss for e in events if isinstance(e, Step)]
    assert all(torch.isfinite(torch.tensor(x)) for x in losses)


def test_final_loads_in_transformers_and_generates(llama_run: Path) -> None:
    final = llama_run / "final"
    model = AutoModelForCausalLM.from_pretrained(final)
    assert isinstance(model, LlamaForCausalLM)
    assert model.config.num_hidden_layers == 4 and model.config.num_key_value_heads == 2
    tok = AutoTokenizer.from_pretrained(final)
    generate = pipeline("text-generation", model=model, tokenizer=tok)
    out = generate("To be or not", max_new_tokens=5, do_sample=False)[0]["generated_text"]
    assert out.startswith("To be or not") and len(tok(out)["input_ids"]) > len(
        tok("To be or not")["input_ids"]
    )


GROWN = """
name = "grown-smollm-shape"
[model]
family = "llama"
hidden_size = 48
num_heads = 3
num_kv_heads = 1
intermediate_size = 128
max_seq_len = 64
final_layers = 4
dropout = 0.0
init_from = "{source}"
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
init = "zero"
train = "new"
steps = 2
"""


def test_init_from_grows_a_saved_llama_of_smollm_shape(llama_run: Path, tmp_path: Path) -> None:
    """SmolLM's ratios in miniature: 3 query heads share 1 kv head, untied head."""
    source = tmp_path / "source"
    tok = AutoTokenizer.from_pretrained(llama_run / "final")
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=48,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=3,
        num_key_value_heads=1,
        max_position_embeddings=64,
        tie_word_embeddings=False,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(source)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(llama_run / "final" / name, source / name)
    text = GROWN.format(source=source)
    events = _train(text, tmp_path / "grown")

    plan = loads_plan(text)
    data = load_blocks(data_spec_for(plan), "llama", plan.seed)
    reference = AutoModelForCausalLM.from_pretrained(source, attn_implementation="sdpa").eval()
    with torch.no_grad():
        expected = float(StagedForward(0, True).loss(reference, data.train_batch(0, 4)))
    steps = [e for e in events if isinstance(e, Step)]
    assert steps[0].loss == pytest.approx(expected, rel=1e-5, abs=1e-6)
    grows = [e for e in events if isinstance(e, Grow)]
    assert [(g.from_layers, g.to_layers) for g in grows] == [(2, 4)]
    grown = AutoModelForCausalLM.from_pretrained(tmp_path / "grown" / "final")
    assert grown.config.num_hidden_layers == 4 and grown.config.num_key_value_heads == 1


def test_init_from_kv_mismatch_is_one_line(llama_run: Path, tmp_path: Path) -> None:
    text = GROWN.format(source=llama_run / "final").replace("hidden_size = 48", "hidden_size = 32")
    text = text.replace("num_heads = 3", "num_heads = 4").replace(
        "num_kv_heads = 1", "num_kv_heads = 4"
    )
    plan_file = tmp_path / "p.toml"
    plan_file.write_text(text)
    out = subprocess.run(
        [sys.executable, "-m", "growcockpit", "plan", "validate", str(plan_file)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "model.num_kv_heads: 4 but the init_from model has 2; set num_kv_heads = 2" in (
        out.stdout + out.stderr
    )


def test_two_gloo_ranks_grow_a_llama_in_lockstep(tmp_path: Path, gc_cache: Path) -> None:
    run_dir = tmp_path / "ddp"
    env = dict(os.environ, GROWCOCKPIT_CACHE=str(gc_cache), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    res = subprocess.run(
        [sys.executable, "-m", "growcockpit", "train", str(TINY_LLAMA), "--run-dir", str(run_dir)]
        + ["--nproc-per-node", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    events = read_all(run_dir / "events.jsonl")
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert len(finished) == 1 and finished[0].status == "completed"
    digests = finished[0].rank_weight_digests
    assert digests is not None and len(digests) == 2 and digests[0] == digests[1], "ranks diverged"
