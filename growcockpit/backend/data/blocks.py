"""Token blocks for training and validation, and the batches drawn from them.

The corpus is tokenized once into a memory-mapped token shard (token_cache.py);
blocks of `seq_len` tokens are read from it on demand, every
`1/val_fraction`-th block is held out, so memory stays flat whatever the size
of the corpus.
Batches and MLM masks are pure functions of (seed, step), so a resumed run
sees exactly the batches the uninterrupted run would have seen.
"""

from __future__ import annotations

import contextlib
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

from growcockpit.backend.control.startup_phases import StartupClock
from growcockpit.backend.data.corpus import Corpus, CorpusLines, DataError, resolve_corpus
from growcockpit.backend.data.hops import (
    TRAIN_STREAM,
    VAL_STREAM,
    causal_labels,
    fixed_tokenizer,
    hop_targets,
)
from growcockpit.backend.data.token_cache import TokenShard, tokenize_to_shard
from growcockpit.backend.data.tokenizer import build_tokenizer
from growcockpit.plan.families import family_facts
from growcockpit.plan.task_source import is_task_source, task_name, task_problems
from growcockpit.plan.types import DataSpec
from growcockpit.protocol.events import WarningEvent
from growcockpit.protocol.token_index import CacheRecord, read_record, record_path, write_record
from growcockpit.text.safe_text import quoted


@dataclass
class Batch:
    input_ids: torch.Tensor
    labels: torch.Tensor  # -100 where no loss is taken
    picked: torch.Tensor | None = None  # flat positions with a label (MLM), found on the host

    @property
    def tokens(self) -> int:
        return int(self.input_ids.numel())

    def to(self, device: torch.device) -> Batch:
        if device.type == "cpu":
            return self
        nb = device.type == "cuda"
        return Batch(
            self.input_ids.to(device, non_blocking=nb),
            self.labels.to(device, non_blocking=nb),
            None if self.picked is None else self.picked.to(device, non_blocking=nb),
        )

    def pinned(self) -> Batch:
        return Batch(
            self.input_ids.pin_memory(),
            self.labels.pin_memory(),
            None if self.picked is None else self.picked.pin_memory(),
        )


class BatchPrefetcher:
    """Builds the next training batch on a background thread while the current step runs.

    Batches are pure functions of their index, so prefetching changes nothing
    but the wait: `get(i)` returns batch i, then starts building batch i + stride.
    """

    def __init__(self, blocks: TokenBlocks, batch_size: int, stride: int, pin: bool) -> None:
        self.blocks = blocks
        self.batch_size = batch_size
        self.stride = stride
        self.pin = pin
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="batch-prefetch")
        self._pending: tuple[int, Future[Batch]] | None = None

    def _build(self, index: int) -> Batch:
        batch = self.blocks.train_batch(index, self.batch_size)
        return batch.pinned() if self.pin else batch

    def get(self, index: int) -> Batch:
        if self._pending is not None and self._pending[0] == index:
            batch = self._pending[1].result()
        else:
            batch = self._build(index)
        self._pending = (index + self.stride, self._pool.submit(self._build, index + self.stride))
        return batch

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class BlockView:
    """Blocks of a memory-mapped id array, read on demand: row j is block `index(j)`.

    BERT blocks are [CLS] + seq_len-2 tokens + [SEP]; GPT-2 blocks are raw
    windows. Indexing (`view[rows]`, `view[rows, cols]`) returns a long tensor.
    """

    def __init__(
        self,
        ids: np.ndarray,
        seq_len: int,
        family: str,
        tokenizer: PreTrainedTokenizerBase,
        every: int,
        val: bool,
    ) -> None:
        self.ids = ids
        self.family = family
        self.wrap = family_facts(family).boundary_tokens == 2
        self.body = seq_len - family_facts(family).boundary_tokens
        self.seq_len = seq_len
        self.every = every
        self.val = val
        self.cls = tokenizer.cls_token_id
        self.sep = tokenizer.sep_token_id
        total = len(ids) // self.body
        held = total // every if every else 0
        self.rows = held if val else total - held

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.seq_len)

    def __len__(self) -> int:
        return self.rows

    def block_index(self, rows: np.ndarray) -> np.ndarray:
        """Row number → block number: every `every`-th block is a validation block."""
        if self.val:
            out: np.ndarray = rows * self.every + self.every - 1
        elif self.every:
            out = rows + rows // (self.every - 1)
        else:
            out = rows
        return out

    def take(self, rows: np.ndarray) -> torch.Tensor:
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= self.rows):
            raise IndexError(f"block rows out of range 0..{self.rows - 1}")
        starts = self.block_index(rows) * self.body
        body = np.asarray(self.ids[starts[:, None] + np.arange(self.body)], dtype=np.int64)
        out = torch.from_numpy(body)
        if self.wrap:  # [CLS] body [SEP]
            n = out.shape[0]
            cls = torch.full((n, 1), self.cls, dtype=torch.long)
            sep = torch.full((n, 1), self.sep, dtype=torch.long)
            out = torch.cat([cls, out, sep], dim=1)
        return out

    def __getitem__(self, index: object) -> torch.Tensor:
        key = index
        rest: tuple[
            Any, ...
        ] = ()  # the trailing indices of `blocks[rows, cols]`, as torch takes them
        if isinstance(index, tuple):
            key, rest = index[0], index[1:]
        if isinstance(key, int):
            row = self.take(np.asarray([key % self.rows if key < 0 else key]))[0]
            return row[rest] if rest else row
        if isinstance(key, slice):
            rows = np.arange(*key.indices(self.rows))
        else:
            rows = key.numpy() if isinstance(key, torch.Tensor) else np.asarray(key)
        block = self.take(rows)
        return block[(slice(None), *rest)] if rest else block


class TokenBlocks:
    """Fixed-length training/validation blocks plus the family's batch recipe."""

    def __init__(
        self,
        ids: np.ndarray,
        seq_len: int,
        val_fraction: float,
        tokenizer: PreTrainedTokenizerBase,
        family: str,
        mlm_probability: float,
        seed: int,
        val_ids: np.ndarray | None = None,
    ) -> None:
        if (
            val_ids is not None
        ):  # the source's own validation split: every block of each trains/validates
            self.train = BlockView(ids, seq_len, family, tokenizer, 0, val=False)
            self.val = BlockView(val_ids, seq_len, family, tokenizer, 0, val=False)
        else:
            every = max(2, round(1 / val_fraction)) if val_fraction > 0 else 0
            self.train = BlockView(ids, seq_len, family, tokenizer, every, val=False)
            self.val = BlockView(ids, seq_len, family, tokenizer, every, val=True)
        self.tokenizer = tokenizer
        self.family = family
        self.mlm_probability = mlm_probability
        self.seed = seed
        self.vocab_size = len(tokenizer)
        self._special = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
        self._perm_cache: tuple[int, torch.Tensor] = (-1, torch.empty(0, dtype=torch.long))

    def train_batch(self, step: int, batch_size: int) -> Batch:
        """Batch number `step` (0-based) of an endless shuffled pass over the blocks."""
        return self._make(
            self.train[self.batch_rows(step, batch_size)], self.seed * 1_000_003 + step
        )

    def batch_rows(self, step: int, batch_size: int) -> torch.Tensor:
        """The training rows of batch `step`: positions step·b … step·b + b − 1 of the endless
        sequence epoch 0's permutation, epoch 1's, … (each epoch its own shuffle)."""
        n = self.train.shape[0]
        start = step * batch_size
        first, last = start // n, (start + batch_size - 1) // n
        if first == last:  # the usual case, one epoch: a slice of its permutation, no arithmetic
            return self._permutation(first, n)[start % n : start % n + batch_size]
        positions = torch.arange(start, start + batch_size)
        epochs, offsets = positions // n, positions % n
        idx = torch.empty(batch_size, dtype=torch.long)
        for epoch in range(first, last + 1):
            sel = epochs == epoch
            idx[sel] = self._permutation(epoch, n)[offsets[sel]]
        return idx

    def val_batches(self, batch_size: int, max_batches: int) -> list[Batch]:
        out = []
        for b in range(min(max_batches, max(1, self.val.shape[0] // batch_size))):
            ids = self.val[b * batch_size : (b + 1) * batch_size]
            if ids.shape[0] == 0:
                break
            out.append(self._make(ids, self.seed + 7919 * (b + 1)))
        return out

    def _permutation(self, epoch: int, n: int) -> torch.Tensor:
        cached = self._perm_cache  # one tuple, swapped atomically: safe with the prefetch thread
        if cached[0] != epoch:
            perm = torch.randperm(n, generator=torch.Generator().manual_seed(self.seed + epoch))
            self._perm_cache = cached = (epoch, perm)
        return cached[1]

    def _make(self, ids: torch.Tensor, mask_seed: int) -> Batch:
        """A batch of `ids`; MLM masks drawn from a generator seeded with `mask_seed` (made
        only for them: a causal batch draws nothing, and each generator costs a seeding)."""
        ids = ids.long()
        if family_facts(self.family).objective == "causal":
            labels = ids.clone()
            return Batch(ids, labels)
        batch = mask_tokens(
            ids,
            self.tokenizer.mask_token_id,
            self._special,
            self.vocab_size,
            self.mlm_probability,
            torch.Generator().manual_seed(mask_seed),
        )
        batch.picked = (batch.labels.view(-1) != -100).nonzero().squeeze(1)
        return batch


def mask_tokens(
    ids: torch.Tensor,
    mask_id: int,
    special_ids: torch.Tensor,
    vocab_size: int,
    probability: float,
    gen: torch.Generator,
) -> Batch:
    """BERT masking: pick `probability` of the non-special tokens; 80 % [MASK], 10 % random, 10 % kept."""
    labels = ids.clone()
    probs = torch.full(ids.shape, probability)
    probs[torch.isin(ids, special_ids)] = 0.0
    picked = torch.bernoulli(probs, generator=gen).bool()
    if not picked.any():
        picked.view(-1)[int(torch.argmax(probs.view(-1)))] = True
    labels[~picked] = -100
    inputs = ids.clone()
    replace = torch.bernoulli(torch.full(ids.shape, 0.8), generator=gen).bool() & picked
    inputs[replace] = mask_id
    randomize = (
        torch.bernoulli(torch.full(ids.shape, 0.5), generator=gen).bool() & picked & ~replace
    )
    inputs[randomize] = torch.randint(vocab_size, ids.shape, generator=gen)[randomize]
    return Batch(inputs, labels)


def load_blocks(
    spec: DataSpec, family: str, seed: int, clock: StartupClock | None = None
) -> TokenBlocks:
    """Corpus → tokenizer → cached token shard → blocks. Raises DataError with a fix on bad input.

    A source with a validation split (a `save_to_disk` DatasetDict) validates on that
    split, tokenized into its own shard; otherwise every 1/val_fraction-th block is held out.
    `clock` reports the tokenizer and the token cache as start-up phases.
    """
    if is_task_source(spec.source):  # generated, fixed vocabulary: no corpus, no cache
        return load_task(spec, family, seed)
    clock = clock or StartupClock()
    corpus = resolve_corpus(spec.source, spec.text_column)
    if (skipped := corpus.skipped_warning()) is not None:  # a FIFO beside the files: said once
        clock.emit(WarningEvent(message=skipped))
    with clock.phase("tokenizer") as note:
        try:
            tokenizer = build_tokenizer(spec.tokenizer, family, corpus, None)
            note.text = "from the cache" if spec.tokenizer.startswith("train:") else ""
        except DataError as exc:
            if "internal: texts are needed" not in str(exc):
                raise
            tokenizer = build_tokenizer(spec.tokenizer, family, corpus, [CorpusLines(corpus)])
            note.text = "trained on the corpus"
    with clock.phase("token_cache") as note:
        started = time.perf_counter()
        shard = tokenize_to_shard(corpus, tokenizer, family)
        _note_in_index(spec, family, corpus, shard, time.perf_counter() - started)
        note.text = "tokenized the corpus" if shard.fresh else "from the cache"
    ids = shard.ids()
    body = spec.seq_len - family_facts(family).boundary_tokens
    if len(ids) // body < 2:
        raise DataError(
            f"data.source = {quoted(spec.source)}: only {len(ids) // body} block(s) of {spec.seq_len} tokens; "
            "add more text or lower data.seq_len"
        )
    val_corpus = corpus.validation()
    val_ids = None if val_corpus is None else tokenize_to_shard(val_corpus, tokenizer, family).ids()
    if val_ids is not None and len(val_ids) // body < 1:
        raise DataError(
            f"data.source = {spec.source!r}: its validation split holds less than one block of "
            f"{spec.seq_len} tokens; add text to it or lower data.seq_len"
        )
    return TokenBlocks(
        ids, spec.seq_len, spec.val_fraction, tokenizer, family, spec.mlm_probability, seed, val_ids
    )


class HopBlocks(TokenBlocks):
    """k-hop induction's batches (`data.source = "task:hops"`, backend/data/hops.py) behind
    the text blocks' interface (train_batch, val_batches, tokenizer): the engine, probes and
    calibration take either."""

    def __init__(self, spec: DataSpec, family: str, seed: int) -> None:
        self.tokenizer: PreTrainedTokenizerBase = fixed_tokenizer(spec.alphabet)
        self.family = family
        self.seed = seed
        self.seq_len = spec.seq_len
        self.hops = spec.hops
        self.alphabet = spec.alphabet
        self.vocab_size = len(self.tokenizer)
        self.mlm_probability = 0.0

    def sequences(self, stream: int, index: int, rows: int) -> torch.Tensor:
        """`rows` sequences of batch `index` of `stream`, uniform over the alphabet."""
        rng = np.random.default_rng([self.seed, stream, index])
        return torch.from_numpy(rng.integers(0, self.alphabet, size=(rows, self.seq_len)))

    def make(self, x: torch.Tensor) -> Batch:
        return Batch(x, causal_labels(hop_targets(x, self.hops)))

    def train_batch(self, step: int, batch_size: int) -> Batch:
        return self.make(self.sequences(TRAIN_STREAM, step, batch_size))

    def val_batches(self, batch_size: int, max_batches: int) -> list[Batch]:
        return [self.make(self.sequences(VAL_STREAM, b, batch_size)) for b in range(max_batches)]


def load_task(spec: DataSpec, family: str, seed: int) -> HopBlocks:
    """The task a `task:` source names; DataError (one line, with the fix) on a bad plan."""
    # the tokenizer key is the plan's business (a resumed run names its saved copy here)
    problems = [p for p in task_problems(spec, family) if p[0] != "data.tokenizer"]
    if problems:
        key, problem = problems[0]
        raise DataError(f"{key}: {problem}")
    if task_name(spec.source) == "hops":
        return HopBlocks(spec, family, seed)
    raise DataError(f"data.source = {spec.source!r}: no such task")  # task_problems said so


def _note_in_index(
    spec: DataSpec, family: str, corpus: Corpus, shard: TokenShard, seconds: float
) -> None:
    """Leave the record the designer's Data tab reads (protocol/token_index.py)."""
    path = record_path(spec.source, spec.tokenizer, family)
    if not shard.fresh and read_record(path) is not None:
        return
    files = [(f, os.stat(f).st_size, int(os.stat(f).st_mtime)) for f in corpus.files]
    with contextlib.suppress(OSError):  # the record is advisory: a read-only cache still trains
        write_record(path, CacheRecord(files, shard.count, seconds if shard.fresh else 0.0))


__all__ = [
    "Batch",
    "BatchPrefetcher",
    "BlockView",
    "DataError",
    "HopBlocks",
    "TokenBlocks",
    "load_blocks",
    "load_task",
    "mask_tokens",
]
