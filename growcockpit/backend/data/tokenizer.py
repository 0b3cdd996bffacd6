"""The tokenizer a plan names: trained on the corpus ("train:<vocab>") or loaded.

Training a ~8k WordPiece/BPE vocabulary on a few MB takes seconds; the
result is cached by corpus fingerprint so every later launch reuses it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, cast

from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

from growcockpit.backend.data.corpus import Corpus, DataError
from growcockpit.plan.families import family_facts
from growcockpit.protocol.token_index import cache_root
from growcockpit.text.safe_text import quoted


def build_tokenizer(
    spec: str, family: str, corpus: Corpus, texts: Iterable[Iterable[str]] | None
) -> PreTrainedTokenizerBase:
    """Resolve `data.tokenizer`. `texts` is only read when a vocabulary must be trained."""
    if spec.startswith("train:"):
        try:
            vocab = int(spec.split(":", 1)[1])
        except ValueError:
            raise DataError(
                f'data.tokenizer = {quoted(spec)}: expected "train:<vocab size>", e.g. "train:8000"'
            ) from None
        cache = cache_root() / "tokenizers" / f"v2-{family}-{vocab}-{corpus.fingerprint()}"
        if (cache / "tokenizer.json").exists():
            return _load_local(cache, family)
        if texts is None:
            raise DataError("internal: texts are needed to train a tokenizer")
        tok = _train(vocab, family, texts)
        tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
        tok.save_pretrained(tmp)
        try:
            tmp.replace(cache)
        except OSError:  # another process cached the same tokenizer first
            shutil.rmtree(tmp, ignore_errors=True)
        return _load_local(cache, family)
    path = Path(spec).expanduser()
    if path.exists():
        return _load_local(path, family)
    from transformers import AutoTokenizer

    try:  # the local cache only, as `plan validate` checked: never a hub lookup at launch
        return AutoTokenizer.from_pretrained(spec, local_files_only=True)
    except Exception as exc:
        raise DataError(
            f"data.tokenizer = {quoted(spec)}: not a local path and not loadable from the local "
            f"Hugging Face cache ({str(exc)[:120]}); download it once with `hf download {spec}` "
            'or use "train:8000"'
        ) from None


def _load_local(path: Path, family: str) -> PreTrainedTokenizerBase:
    """Avoids `BertTokenizerFast(vocab_file=...)`, which in transformers 5 silently gives 5 tokens."""
    if path.is_file():
        tok = _fast(tokenizer_file=str(path))
    else:
        tok = PreTrainedTokenizerFast.from_pretrained(str(path))
    facts = family_facts(family)
    missing = {k: v for k, v in facts.specials.items() if getattr(tok, k, None) is None}
    if missing:
        tok.add_special_tokens(missing)  # type: ignore[arg-type]
    if facts.objective == "masked" and tok.mask_token_id is None:
        raise DataError(
            f"data.tokenizer = {quoted(str(path))}: a masked-LM plan ({family}) needs a tokenizer "
            "with a mask token"
        )
    return tok


def _fast(**kwargs: Any) -> PreTrainedTokenizerFast:
    """`PreTrainedTokenizerFast(...)`, whose constructor transformers leaves unannotated."""
    make = cast(Callable[..., PreTrainedTokenizerFast], PreTrainedTokenizerFast)
    return make(**kwargs)


def _train(vocab: int, family: str, texts: Iterable[Iterable[str]]) -> PreTrainedTokenizerFast:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    lines = (line for doc in texts for line in doc)
    specials = dict(family_facts(family).specials)
    if family_facts(family).tokenizer == "wordpiece":
        core = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        core.normalizer = normalizers.BertNormalizer(lowercase=False)
        core.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        core.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab, special_tokens=list(specials.values()), show_progress=False
        )
        core.train_from_iterator(lines, trainer)
        return _fast(tokenizer_object=_canonical_ids(core), **specials)
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    bpe = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=sorted(set(specials.values())),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator((line + "\n" for line in lines), bpe)
    return _fast(tokenizer_object=_canonical_ids(core), **specials)


def _canonical_ids(core: Any) -> Any:
    """Renumber the vocabulary deterministically.

    `tokenizers` learns the same vocabulary every time, but numbers the initial
    alphabet in hash-set order, so two machines would give the same text
    different ids (and a resumed run on a fresh cache different batches).
    Special tokens keep their leading ids; everything else is numbered in
    sorted order, which neither WordPiece (longest match) nor BPE (merge
    ranks) depends on.
    """
    from tokenizers import Tokenizer

    spec = json.loads(core.to_str())
    vocab: dict[str, int] = spec["model"]["vocab"]
    specials = sorted((t["id"], t["content"]) for t in spec.get("added_tokens", []))
    special_names = [name for _, name in specials]
    order = special_names + sorted(t for t in vocab if t not in set(special_names))
    spec["model"]["vocab"] = {tok: i for i, tok in enumerate(order)}
    for entry in spec.get("added_tokens", []):
        entry["id"] = spec["model"]["vocab"][entry["content"]]
    return Tokenizer.from_str(json.dumps(spec))
