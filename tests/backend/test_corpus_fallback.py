"""Without a usable `datasets` (missing, or a lone wheel that cannot import) a plain-text
corpus reads the same lines directly: the offline GPU check needs no datasets dependency set."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from growcockpit.backend.corpus import Corpus, DataError, iter_line_batches, resolve_corpus


def lines(corpus: Corpus) -> list[str]:
    return [line for batch in iter_line_batches(corpus, batch_lines=1000) for line in batch]


@pytest.mark.usefixtures("gc_cache")
def test_text_corpus_without_datasets_gives_the_same_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = tmp_path / "corpus.txt"
    text.write_text("first line\n\nsecond line\r\nthird  \nlast without newline", encoding="utf-8")
    corpora = [resolve_corpus(str(text)), resolve_corpus("builtin")]
    with_datasets = [lines(c) for c in corpora]
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets → ImportError
    assert [lines(c) for c in corpora] == with_datasets
    with pytest.raises(DataError, match="needs the `datasets` package"):
        lines(Corpus("json", (str(text),), "x.jsonl", "text"))
