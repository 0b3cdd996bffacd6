"""Token blocks for training and validation, and the batches drawn from them.

The corpus is tokenized once and cached as a flat id array; blocks of
`seq_len` tokens are cut from it, every `1/val_fraction`-th block is held out.
Batches and MLM masks are pure functions of (seed, step), so a resumed run
sees exactly the batches the uninterrupted run would have seen.
"""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

from growcockpit.backend.corpus import Corpus, DataError, load_texts, resolve_corpus
from growcockpit.backend.tokenizer import build_tokenizer, cache_root
from growcockpit.plan.types import DataSpec


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


class TokenBlocks:
    """Fixed-length training/validation blocks plus the family's batch recipe."""

    def __init__(
        self,
        train: torch.Tensor,
        val: torch.Tensor,
        tokenizer: PreTrainedTokenizerBase,
        family: str,
        mlm_probability: float,
        seed: int,
    ) -> None:
        self.train = train
        self.val = val
        self.tokenizer = tokenizer
        self.family = family
        self.mlm_probability = mlm_probability
        self.seed = seed
        self.vocab_size = len(tokenizer)
        self._special = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
        self._perm_cache: tuple[int, torch.Tensor] = (-1, torch.empty(0, dtype=torch.long))

    def train_batch(self, step: int, batch_size: int) -> Batch:
        """Batch number `step` (0-based) of an endless shuffled pass over the blocks."""
        n = self.train.shape[0]
        positions = torch.arange(step * batch_size, (step + 1) * batch_size)
        epochs, offsets = positions // n, positions % n
        idx = torch.empty(batch_size, dtype=torch.long)
        for epoch in epochs.unique().tolist():
            sel = epochs == epoch
            idx[sel] = self._permutation(int(epoch), n)[offsets[sel]]
        return self._make(
            self.train[idx], torch.Generator().manual_seed(self.seed * 1_000_003 + step)
        )

    def val_batches(self, batch_size: int, max_batches: int) -> list[Batch]:
        out = []
        for b in range(min(max_batches, max(1, self.val.shape[0] // batch_size))):
            ids = self.val[b * batch_size : (b + 1) * batch_size]
            if ids.shape[0] == 0:
                break
            out.append(self._make(ids, torch.Generator().manual_seed(self.seed + 7919 * (b + 1))))
        return out

    def _permutation(self, epoch: int, n: int) -> torch.Tensor:
        cached = self._perm_cache  # one tuple, swapped atomically: safe with the prefetch thread
        if cached[0] != epoch:
            perm = torch.randperm(n, generator=torch.Generator().manual_seed(self.seed + epoch))
            self._perm_cache = cached = (epoch, perm)
        return cached[1]

    def _make(self, ids: torch.Tensor, gen: torch.Generator) -> Batch:
        ids = ids.long()
        if self.family == "gpt2":
            labels = ids.clone()
            return Batch(ids, labels)
        batch = mask_tokens(
            ids,
            self.tokenizer.mask_token_id,
            self._special,
            self.vocab_size,
            self.mlm_probability,
            gen,
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


def load_blocks(spec: DataSpec, family: str, seed: int) -> TokenBlocks:
    """Corpus → tokenizer → cached ids → blocks. Raises DataError with a fix on bad input."""
    corpus = resolve_corpus(spec.source)
    texts: list[list[str]] | None = None
    tokenizer = _tokenizer_with_texts(spec, family, corpus)
    if isinstance(tokenizer, tuple):
        tokenizer, texts = tokenizer
    ids = _cached_ids(corpus, tokenizer, family, texts)
    blocks = _cut_blocks(ids, spec.seq_len, tokenizer, family)
    if blocks.shape[0] < 2:
        raise DataError(
            f"data.source = {spec.source!r}: only {blocks.shape[0]} block(s) of {spec.seq_len} tokens; "
            "add more text or lower data.seq_len"
        )
    every = max(2, round(1 / spec.val_fraction)) if spec.val_fraction > 0 else 0
    is_val = torch.zeros(blocks.shape[0], dtype=torch.bool)
    if every:
        is_val[every - 1 :: every] = True
    return TokenBlocks(
        blocks[~is_val], blocks[is_val], tokenizer, family, spec.mlm_probability, seed
    )


def _tokenizer_with_texts(
    spec: DataSpec, family: str, corpus: Corpus
) -> PreTrainedTokenizerBase | tuple[PreTrainedTokenizerBase, list[list[str]]]:
    """Load the corpus text only when the tokenizer or the id cache needs it."""
    try:
        return build_tokenizer(spec.tokenizer, family, corpus, None)
    except DataError as exc:
        if "internal: texts are needed" not in str(exc):
            raise
    texts = load_texts(corpus)
    return build_tokenizer(spec.tokenizer, family, corpus, texts), texts


def _cached_ids(
    corpus: Corpus, tokenizer: PreTrainedTokenizerBase, family: str, texts: list[list[str]] | None
) -> np.ndarray:
    vocab_hash = hashlib.sha1(tokenizer.backend_tokenizer.to_str().encode()).hexdigest()[:12]
    path = cache_root() / "tokens" / f"{family}-{corpus.fingerprint()}-{vocab_hash}.npy"
    if path.exists():
        return np.load(path)
    if texts is None:
        texts = load_texts(corpus)
    sep = tokenizer.sep_token_id if family == "bert" else tokenizer.eos_token_id
    backend = tokenizer.backend_tokenizer
    chunks: list[np.ndarray] = []
    for doc in texts:
        lines = [t + "\n" for t in doc] if family == "gpt2" else doc
        for start in range(0, len(lines), 4096):
            enc = backend.encode_batch(lines[start : start + 4096], add_special_tokens=False)
            chunks.extend(np.asarray(e.ids, dtype=np.int32) for e in enc)
        chunks.append(np.asarray([sep], dtype=np.int32))
    ids = np.concatenate(chunks)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}.npy")
    np.save(tmp, ids)
    os.replace(tmp, path)
    return ids


def _cut_blocks(
    ids: np.ndarray, seq_len: int, tokenizer: PreTrainedTokenizerBase, family: str
) -> torch.Tensor:
    """BERT blocks are [CLS] + seq_len-2 tokens + [SEP]; GPT-2 blocks are raw windows."""
    body = seq_len - 2 if family == "bert" else seq_len
    n = len(ids) // body
    blocks = torch.from_numpy(ids[: n * body].astype(np.int64)).view(n, body)
    if family == "bert":
        cls = torch.full((n, 1), tokenizer.cls_token_id, dtype=torch.long)
        sep = torch.full((n, 1), tokenizer.sep_token_id, dtype=torch.long)
        blocks = torch.cat([cls, blocks, sep], dim=1)
    return blocks


__all__ = ["Batch", "BatchPrefetcher", "DataError", "TokenBlocks", "load_blocks", "mask_tokens"]
