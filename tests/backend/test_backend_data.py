"""Data sources, tokenizers and batches: a user's own files work like the built-in corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from growcockpit.backend.data.blocks import load_blocks, mask_tokens
from growcockpit.backend.data.corpus import DataError, builtin_files, resolve_corpus
from growcockpit.plan.types import DataSpec

pytestmark = pytest.mark.usefixtures("gc_cache")


def _some_lines(n: int = 3000) -> list[str]:
    lines = Path(builtin_files()[0]).read_text(encoding="utf-8", errors="replace").splitlines()
    return [line for line in lines if line.strip()][:n]


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    lines = _some_lines()
    (root / "a.txt").write_text("\n".join(lines[:1500]))
    (root / "b.txt").write_text("\n".join(lines[1500:]))
    return root


def test_local_text_directory(text_dir: Path) -> None:
    spec = DataSpec(source=str(text_dir), tokenizer="train:600", seq_len=32, val_fraction=0.05)
    blocks = load_blocks(spec, "bert", seed=1)
    assert blocks.train.shape[1] == 32 and blocks.val.shape[0] > 0
    assert (blocks.train[:, 0] == blocks.tokenizer.cls_token_id).all()
    assert (blocks.train[:, -1] == blocks.tokenizer.sep_token_id).all()
    a, b = blocks.train_batch(3, 4), blocks.train_batch(3, 4)
    assert torch.equal(a.input_ids, b.input_ids) and torch.equal(a.labels, b.labels)
    assert not torch.equal(a.input_ids, blocks.train_batch(4, 4).input_ids)
    again = load_blocks(spec, "bert", seed=1)  # second launch: cached tokenizer and ids
    assert torch.equal(again.train[:], blocks.train[:])


def test_batches_walk_each_epochs_shuffle_in_order_across_epoch_ends(text_dir: Path) -> None:
    """Batch rows, concatenated, are epoch 0's permutation, then epoch 1's, ...: a batch that
    straddles an epoch's end takes the tail of one shuffle and the head of the next."""
    spec = DataSpec(source=str(text_dir), tokenizer="train:600", seq_len=32, val_fraction=0.05)
    blocks = load_blocks(spec, "gpt2", seed=3)
    n = blocks.train.shape[0]
    size = 7 if n % 7 else 6  # not a divisor: some batches straddle
    steps = (3 * n) // size + 1
    rows = torch.cat([blocks.batch_rows(step, size) for step in range(steps)])
    epochs = torch.cat([blocks._permutation(e, n) for e in range(len(rows) // n + 1)])
    assert torch.equal(rows, epochs[: len(rows)])
    assert any((s * size) // n != (s * size + size - 1) // n for s in range(steps))
    assert torch.equal(
        blocks.train_batch(5, size).input_ids, blocks.train[rows[5 * size : 6 * size]]
    )


def test_jsonl_glob_and_gpt2_blocks(tmp_path: Path) -> None:
    lines = _some_lines(2000)
    for i in range(2):
        with open(tmp_path / f"part{i}.jsonl", "w") as fh:
            for line in lines[i * 1000 : (i + 1) * 1000]:
                fh.write(json.dumps({"text": line, "id": 1}) + "\n")
    spec = DataSpec(source=str(tmp_path / "*.jsonl"), tokenizer="train:500", seq_len=48)
    blocks = load_blocks(spec, "gpt2", seed=0)
    batch = blocks.train_batch(0, 2)
    assert batch.input_ids.shape == (2, 48)
    assert torch.equal(batch.input_ids, batch.labels), (
        "causal LM: labels are the inputs (shifted in the loss)"
    )


def test_parquet_file(tmp_path: Path) -> None:
    import datasets

    path = tmp_path / "corpus.parquet"
    datasets.Dataset.from_dict({"text": _some_lines(1500)}).to_parquet(str(path))
    blocks = load_blocks(
        DataSpec(source=str(path), tokenizer="train:500", seq_len=32), "bert", seed=0
    )
    assert blocks.train.shape[0] > 10


def test_local_tokenizer_path(text_dir: Path, tmp_path: Path) -> None:
    trained = load_blocks(
        DataSpec(source=str(text_dir), tokenizer="train:600", seq_len=32), "bert", 0
    )
    saved = tmp_path / "tok"
    trained.tokenizer.save_pretrained(saved)
    reused = load_blocks(
        DataSpec(source=str(text_dir), tokenizer=str(saved), seq_len=32), "bert", 0
    )
    assert len(reused.tokenizer) == len(trained.tokenizer)
    assert torch.equal(reused.train[:], trained.train[:])


def test_bad_sources_say_how_to_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DataError, match="no such file"):
        resolve_corpus(str(tmp_path / "missing" / "x.txt"))
    (tmp_path / "a.txt").write_text("hello")
    (tmp_path / "b.jsonl").write_text('{"text": "hi"}\n')
    with pytest.raises(DataError, match="mixes file formats"):
        resolve_corpus(str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError, match="HF_HUB_OFFLINE"):
        load_blocks(DataSpec(source="some-user/some-dataset", tokenizer="train:100"), "bert", 0)
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    (tiny / "t.txt").write_text("just a few words")
    with pytest.raises(DataError, match="seq_len"):
        load_blocks(DataSpec(source=str(tiny), tokenizer="train:50", seq_len=64), "bert", 0)


def test_mlm_masking_80_10_10() -> None:
    gen = torch.Generator().manual_seed(0)
    special = torch.tensor([0, 1, 2, 3, 4])
    ids = torch.randint(5, 1000, (64, 128), generator=gen)
    ids[:, 0] = 2
    batch = mask_tokens(
        ids, mask_id=4, special_ids=special, vocab_size=1000, probability=0.15, gen=gen
    )
    picked = batch.labels != -100
    assert not picked[:, 0].any(), "special tokens are never masked"
    assert abs(picked.float().mean().item() - 0.15 * 127 / 128) < 0.01
    assert torch.equal(batch.labels[picked], ids[picked])
    masked = (batch.input_ids == 4) & picked
    kept = (batch.input_ids == ids) & picked
    n = picked.sum().item()
    assert abs(masked.sum().item() / n - 0.8) < 0.03
    assert abs(kept.sum().item() / n - 0.1) < 0.03
    assert torch.equal(batch.input_ids[~picked], ids[~picked])


def test_vocabulary_ids_are_canonical(text_dir: Path) -> None:
    """The same learned vocabulary always gets the same ids, whatever order training produced.

    (`tokenizers` can still break merge ties differently between processes, which is
    why a run keeps its own tokenizer in `runs/<id>/tokenizer/`.)
    """
    import json
    import random

    from tokenizers import Tokenizer

    from growcockpit.backend.data.tokenizer import _canonical_ids

    blocks = load_blocks(
        DataSpec(source=str(text_dir), tokenizer="train:600", seq_len=32), "bert", 0
    )
    spec = json.loads(blocks.tokenizer.backend_tokenizer.to_str())
    tokens = list(spec["model"]["vocab"])
    specials = [t["content"] for t in spec["added_tokens"]]
    rest = [t for t in tokens if t not in specials]
    random.Random(0).shuffle(rest)
    spec["model"]["vocab"] = {t: i for i, t in enumerate(specials + rest)}
    shuffled = Tokenizer.from_str(json.dumps(spec))
    a = json.loads(_canonical_ids(shuffled).to_str())["model"]["vocab"]
    b = json.loads(blocks.tokenizer.backend_tokenizer.to_str())["model"]["vocab"]
    assert a == b
    assert [a[t] for t in specials] == list(range(len(specials)))


def test_tokens_are_a_memory_mapped_shard_of_every_line(text_dir: Path) -> None:
    import numpy as np

    from growcockpit.backend.data.token_cache import cached_shard, id_dtype, shard_dir

    spec = DataSpec(source=str(text_dir), tokenizer="train:600", seq_len=32, val_fraction=0.1)
    blocks = load_blocks(spec, "bert", seed=0)
    tok = blocks.tokenizer
    shard = cached_shard(shard_dir(resolve_corpus(str(text_dir)), tok, "bert"))
    assert shard is not None and shard.dtype == "uint16"
    ids = shard.ids()
    assert isinstance(ids, np.memmap)
    lines = [line for f in ("a.txt", "b.txt") for line in (text_dir / f).read_text().splitlines()]
    expected = [i for line in lines if line for i in tok.encode(line, add_special_tokens=False)]
    assert ids.tolist() == [*expected, tok.sep_token_id]
    # blocks: train and val rows interleave back into every block of the id stream, in order
    body = 30
    every = 10
    n = len(ids) // body
    train, val = blocks.train[:], blocks.val[:]
    assert train.shape[0] + val.shape[0] == n
    merged = []
    t = v = 0
    for b in range(n):
        if b % every == every - 1:
            merged.append(val[v])
            v += 1
        else:
            merged.append(train[t])
            t += 1
    bodies = torch.stack(merged)[:, 1:-1]
    assert torch.equal(bodies, torch.from_numpy(ids[: n * body].astype(np.int64)).view(n, body))
    assert id_dtype(30_000) == "uint16" and id_dtype(70_000) == "uint32"


def test_a_half_written_token_cache_is_never_used(text_dir: Path) -> None:
    from growcockpit.backend.data.token_cache import META, SHARD, shard_dir

    spec = DataSpec(source=str(text_dir), tokenizer="train:600", seq_len=32)
    good = load_blocks(spec, "bert", seed=0)
    root = shard_dir(resolve_corpus(str(text_dir)), good.tokenizer, "bert")
    train, val = good.train[:], good.val[:]  # read before the file under the mapping is cut
    del good
    full = (root / SHARD).read_bytes()
    (root / SHARD).write_bytes(full[: len(full) // 2])  # torn: shorter than meta.json says
    again = load_blocks(spec, "bert", seed=0)
    assert (root / SHARD).read_bytes() == full, "the torn shard was rebuilt"
    assert torch.equal(again.train[:], train)
    (root / META).unlink()  # no meta.json: not finished, rebuilt
    assert torch.equal(load_blocks(spec, "bert", seed=0).val[:], val)
    assert not list(root.parent.glob(".*.tmp*")), "no temporary directory left behind"


def test_the_token_cache_is_shared_by_runs_of_the_same_data_and_keyed_by_the_separator(
    text_dir: Path,
) -> None:
    """A second load of the same data reads the shard (not re-tokenized); a tokenizer whose
    config names another separator (its tokenizer.json unchanged) gets a shard of its own."""
    from growcockpit.backend.data.token_cache import shard_dir, tokenize_to_shard

    spec = DataSpec(source=str(text_dir), tokenizer="train:600", seq_len=32)
    first = load_blocks(spec, "bert", seed=0)
    corpus = resolve_corpus(str(text_dir))
    again = tokenize_to_shard(corpus, first.tokenizer, "bert")
    assert not again.fresh, "the same data's shard is reused"
    other = first.tokenizer.__class__(
        tokenizer_object=first.tokenizer.backend_tokenizer, sep_token=first.tokenizer.cls_token
    )
    assert other.backend_tokenizer.to_str() == first.tokenizer.backend_tokenizer.to_str()
    assert other.sep_token_id != first.tokenizer.sep_token_id
    assert shard_dir(corpus, other, "bert") != shard_dir(corpus, first.tokenizer, "bert")
    shard = tokenize_to_shard(corpus, other, "bert")
    assert shard.fresh and int(shard.ids()[-1]) == other.sep_token_id
