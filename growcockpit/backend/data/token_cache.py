"""The corpus tokenized once into a memory-mapped token shard under the cache.

Lines stream from `datasets` in batches, `encode_batch_fast` tokenizes each
batch on every core (the tokenizers library's own thread pool; no offsets are
computed), and the ids are appended to a flat uint16 file (uint32 when the
vocabulary needs it). Training
reads it through `np.memmap`, so neither step holds the corpus in memory. The
shard is written in a temporary directory and renamed into place with its
`meta.json`, so a half-written cache is never used.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from transformers import PreTrainedTokenizerBase

from growcockpit.backend.data.corpus import Corpus, iter_line_batches
from growcockpit.plan.families import family_facts
from growcockpit.protocol.token_index import cache_root
from growcockpit.text import safe_json

CACHE_VERSION = "v4"  # v4: the separator id is part of the key
SHARD = "tokens.bin"
META = "meta.json"


@dataclass(frozen=True)
class TokenShard:
    """A finished token file: `count` ids of `dtype`."""

    root: Path
    dtype: str
    count: int
    fresh: bool = False  # tokenized just now (not read from the cache)

    def ids(self) -> np.ndarray:
        """The ids, memory-mapped read-only (pages load as batches touch them)."""
        if self.count == 0:
            return np.zeros(0, dtype=self.dtype)
        return np.memmap(self.root / SHARD, dtype=self.dtype, mode="r", shape=(self.count,))


def id_dtype(vocab_size: int) -> str:
    return "uint16" if vocab_size <= 1 << 16 else "uint32"


def separator_id(tokenizer: PreTrainedTokenizerBase, family: str) -> int:
    """The id written after the corpus: EOS for byte-level BPE families, SEP otherwise."""
    byte_level = family_facts(family).tokenizer == "byte-bpe"
    sep = tokenizer.eos_token_id if byte_level else tokenizer.sep_token_id
    return int(sep) if sep is not None else -1


def shard_dir(corpus: Corpus, tokenizer: PreTrainedTokenizerBase, family: str) -> Path:
    """The shard's cache directory, named by everything that changes its ids: the code's
    version, the family (newline handling, separator), the corpus files (names, sizes,
    mtimes, text column), the tokenizer's whole definition and the separator's id (set
    by the tokenizer's config, outside that definition). Runs of the same data share it."""
    what = f"{tokenizer.backend_tokenizer.to_str()}|sep={separator_id(tokenizer, family)}"
    vocab_hash = hashlib.sha1(what.encode()).hexdigest()[:12]
    name = f"{CACHE_VERSION}-{family}-{corpus.fingerprint()}-{vocab_hash}"
    return cache_root() / "tokens" / name


def cached_shard(root: Path) -> TokenShard | None:
    """The shard in `root`, or None when it is not there (or not complete)."""
    try:
        meta = safe_json.read_object(root / META, "it is rebuilt on the next launch", 1 << 20)
        shard = TokenShard(root, str(meta["dtype"]), int(str(meta["count"])))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    expected = shard.count * np.dtype(shard.dtype).itemsize
    if not (root / SHARD).is_file() or (root / SHARD).stat().st_size != expected:
        return None
    return shard


def tokenize_to_shard(
    corpus: Corpus,
    tokenizer: PreTrainedTokenizerBase,
    family: str,
    batch_lines: int = 8192,
) -> TokenShard:
    """The corpus's ids (cached): every line's tokens in order, then one separator.

    GPT-2 lines keep their newline (it is a token there); BERT lines do not.
    """
    root = shard_dir(corpus, tokenizer, family)
    found = cached_shard(root)
    if found is not None:
        return found
    dtype = np.dtype(id_dtype(len(tokenizer)))
    byte_level = family_facts(family).tokenizer == "byte-bpe"
    sep = tokenizer.eos_token_id if byte_level else tokenizer.sep_token_id
    backend = tokenizer.backend_tokenizer
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = root.with_name(f".{root.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    count = 0
    try:
        with open(tmp / SHARD, "wb") as out:
            for lines in iter_line_batches(corpus, batch_lines):
                if byte_level:
                    lines = [line + "\n" for line in lines]
                encoded = backend.encode_batch_fast(lines, add_special_tokens=False)
                ids = np.fromiter((i for e in encoded for i in e.ids), dtype=dtype, count=-1)
                ids.tofile(out)
                count += len(ids)
            np.asarray([sep], dtype=dtype).tofile(out)
            count += 1
        (tmp / META).write_text(json.dumps({"dtype": dtype.name, "count": count}))
        if root.exists() and cached_shard(root) is None:  # a torn earlier attempt
            shutil.rmtree(root, ignore_errors=True)
        try:
            os.replace(tmp, root)
        except OSError:  # another process cached the same shard first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shard = cached_shard(root)
    if shard is None:  # pragma: no cover - the rename above put it there
        raise OSError(f"{root}: token cache vanished after writing")
    return dataclasses.replace(shard, fresh=True)
