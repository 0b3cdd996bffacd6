"""A `save_pretrained` tokenizer without its family's special tokens: they are added (docs/data.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from growcockpit.backend.data.corpus import resolve_corpus
from growcockpit.backend.data.tokenizer import build_tokenizer

LINES = [f"line {i}: the quick brown fox" for i in range(50)]


def saved_wordpiece(root: Path, specials: list[str]) -> int:
    core = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    core.train_from_iterator(
        LINES, trainers.WordPieceTrainer(vocab_size=200, special_tokens=specials)
    )
    named = {"[UNK]": "unk_token", "[PAD]": "pad_token", "[CLS]": "cls_token", "[SEP]": "sep_token"}
    tok = PreTrainedTokenizerFast(tokenizer_object=core, **{named[s]: s for s in specials})
    tok.save_pretrained(str(root))
    return len(tok)


@pytest.mark.usefixtures("gc_cache")
def test_missing_special_tokens_are_added_as_new_ids(tmp_path: Path) -> None:
    size = saved_wordpiece(tmp_path / "tok", ["[UNK]", "[PAD]", "[CLS]", "[SEP]"])  # no [MASK]
    (tmp_path / "t.txt").write_text("\n".join(LINES))
    tok = build_tokenizer(
        str(tmp_path / "tok"), "bert", resolve_corpus(str(tmp_path / "t.txt")), None
    )
    assert tok.mask_token == "[MASK]"
    assert len(tok) == size + 1 and tok.mask_token_id == size  # one new id, after the others
    assert tok.cls_token_id < size  # the ones it had keep their ids
