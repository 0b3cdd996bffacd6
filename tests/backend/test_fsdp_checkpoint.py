"""Sharded (DCP) checkpoints in one process: written and read back bit for bit, refused
when not finite, and a crafted or damaged index refused in one line before it can run
code or allocate. The 2-rank runs are in test_fsdp.py and test_fsdp_crash.py."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest
import torch
from repo_paths import TINY_TOML
from transformers import BertConfig, BertForMaskedLM

from growcockpit.backend.parallel.distributed import DistContext
from growcockpit.backend.state.checkpoint import CheckpointError, NonFiniteState
from growcockpit.backend.state.checkpoint_dirs import SHARDS_DIR
from growcockpit.backend.state.fsdp_checkpoint import (
    load_sharded_optimizer,
    load_sharded_weights,
    stage_shards,
)
from growcockpit.backend.state.init_from import initial_model
from growcockpit.backend.state.restore import pick_checkpoint
from growcockpit.backend.state.shard_checks import check_shards, read_index
from growcockpit.plan import load_plan, loads_plan

CONFIG = BertConfig(
    vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
    intermediate_size=32, max_position_embeddings=16,
)  # fmt: skip


def model_and_optimizer(seed: int) -> tuple[BertForMaskedLM, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    model = BertForMaskedLM(CONFIG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(
        input_ids=torch.randint(0, 50, (2, 8)), labels=torch.randint(0, 50, (2, 8))
    ).loss.backward()
    optimizer.step()
    return model, optimizer


def staged(tmp_path: Path) -> Path:
    model, optimizer = model_and_optimizer(0)
    tmp = stage_shards(tmp_path / "checkpoints", 7, model, optimizer, 1.5, DistContext())
    assert tmp is not None
    return tmp


def test_shards_round_trip_bit_for_bit(tmp_path: Path) -> None:
    model, optimizer = model_and_optimizer(0)
    tmp = stage_shards(tmp_path / "checkpoints", 7, model, optimizer, 1.5, DistContext())
    assert tmp is not None and tmp.name.startswith(".tmp-step-7-")
    files = sorted(p.name for p in (tmp / SHARDS_DIR).iterdir())
    assert files == [".metadata", "__0_0.distcp"]
    assert all(os.stat(p).st_mode & 0o777 == 0o600 for p in (tmp / SHARDS_DIR).iterdir())

    other, other_opt = model_and_optimizer(1)  # other weights and moments, all replaced
    load_sharded_weights(tmp, other, DistContext())
    load_sharded_optimizer(tmp, other, other_opt, DistContext())
    for (name, a), b in zip(model.state_dict().items(), other.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    saved, loaded = optimizer.state_dict()["state"], other_opt.state_dict()["state"]
    assert saved.keys() == loaded.keys()
    for index, slots in saved.items():
        assert all(torch.equal(t, loaded[index][k]) for k, t in slots.items())
    reference = BertForMaskedLM(CONFIG).state_dict()
    check_shards(tmp, reference, load_plan(TINY_TOML))  # the index matches its model


def test_non_finite_shards_are_never_written(tmp_path: Path) -> None:
    model, optimizer = model_and_optimizer(0)
    with torch.no_grad():
        model.bert.encoder.layer[1].output.dense.bias[3] = float("nan")
    root = tmp_path / "checkpoints"
    with pytest.raises(NonFiniteState, match=r"layer\.1\.output\.dense\.bias is not finite"):
        stage_shards(root, 7, model, optimizer, 1.5, DistContext())
    assert not root.exists() or not list(root.iterdir())
    with pytest.raises(NonFiniteState, match="the last loss is nan"):
        stage_shards(root, 7, *model_and_optimizer(0), float("nan"), DistContext())


def test_crafted_index_never_runs_code(tmp_path: Path) -> None:
    tmp = staged(tmp_path)
    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    (tmp / SHARDS_DIR / ".metadata").write_bytes(pickle.dumps(Exploit()))
    with pytest.raises(CheckpointError, match="refused to load.*possibly hostile") as err:
        read_index(tmp / SHARDS_DIR)
    assert "\n" not in str(err.value) and not marker.exists()
    other, _ = model_and_optimizer(1)
    with pytest.raises(CheckpointError, match="refused to load"):
        load_sharded_weights(tmp, other, DistContext())
    assert not marker.exists()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: (d / ".metadata").write_bytes(b"\x80\x04\x95"), "cannot be read"),
        (lambda d: (d / ".metadata").unlink(), "missing"),
        (
            lambda d: os.replace(d / ".metadata", d / "x") or os.symlink(d / "x", d / ".metadata"),
            "link",
        ),
    ],
    ids=["truncated", "missing", "planted link"],
)
def test_damaged_index_is_refused_in_one_line(tmp_path: Path, damage, message: str) -> None:  # type: ignore[no-untyped-def]
    tmp = staged(tmp_path)
    damage(tmp / SHARDS_DIR)
    with pytest.raises(CheckpointError, match=message) as err:
        read_index(tmp / SHARDS_DIR)
    assert "\n" not in str(err.value)


def test_index_of_another_model_is_refused(tmp_path: Path) -> None:
    tmp = staged(tmp_path)
    wider = BertConfig(**{**CONFIG.to_dict(), "intermediate_size": 64})
    plan = load_plan(TINY_TOML)
    with pytest.raises(CheckpointError, match=r"intermediate\.dense\.weight is \(32, 16\)"):
        check_shards(tmp, BertForMaskedLM(wider).state_dict(), plan)
    deeper = BertConfig(**{**CONFIG.to_dict(), "num_hidden_layers": 3})
    with pytest.raises(CheckpointError, match=r"no tensor .*layer\.2\."):
        check_shards(tmp, BertForMaskedLM(deeper).state_dict(), plan)


class VocabOf50:
    """All `initial_model` asks of a tokenizer: its length."""

    def __len__(self) -> int:
        return 50


def test_ranks_past_zero_never_read_init_from_weights(tmp_path: Path) -> None:
    """Under FSDP only rank 0 reads `init_from`: the others get the source's model with its
    memory allocated, unread (rank 0's weights reach it at the first shard), ties kept."""
    source = BertForMaskedLM(CONFIG)
    source.save_pretrained(tmp_path / "source")
    plan = loads_plan(
        f"""name = "x"
[model]
family = "bert"
hidden_size = 16
num_heads = 2
intermediate_size = 32
max_seq_len = 16
final_layers = 2
init_from = "{tmp_path / "source"}"
[data]
tokenizer = "train:2000"
seq_len = 16
[[stages]]
name = "a"
layers = 2
steps = 1
"""
    )
    tokenizer: Any = VocabOf50()
    read, _ = initial_model(plan, tokenizer)
    unread, notes = initial_model(plan, tokenizer, read_weights=False)
    assert notes == [] and type(unread) is type(read)
    want, got = read.state_dict(), unread.state_dict()
    assert [(k, v.shape, v.dtype) for k, v in want.items()] == [
        (k, v.shape, v.dtype) for k, v in got.items()
    ]
    assert all(not v.is_meta for v in got.values())
    bert: Any = unread
    assert bert.cls.predictions.decoder.weight is bert.bert.embeddings.word_embeddings.weight
    assert not torch.equal(
        got["bert.encoder.layer.0.output.dense.weight"],
        want["bert.encoder.layer.0.output.dense.weight"],
    )


def test_resume_passes_over_shards_without_their_index(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    for step in (10, 20):
        (root / f"step-{step}" / SHARDS_DIR).mkdir(parents=True)
        torch.save({"position": {"step": step}}, root / f"step-{step}" / "state.pt")
        (root / f"step-{step}" / SHARDS_DIR / ".metadata").write_bytes(b"index")
    (root / "step-20" / SHARDS_DIR / ".metadata").unlink()  # a copy cut short
    picked, notes = pick_checkpoint(root)
    assert picked.name == "step-10"
    assert notes == [
        "step-20 is unusable (its shards/ has no .metadata index: cut short or damaged): skipped"
    ]
