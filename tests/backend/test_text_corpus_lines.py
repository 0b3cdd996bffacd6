"""Plain-text corpora are read without `datasets` (30× faster than its Arrow tables), yet
give exactly the lines its "text" builder gives; JSON corpora still need `datasets`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from growcockpit.backend.data.corpus import Corpus, DataError, iter_line_batches, resolve_corpus


def lines(corpus: Corpus) -> list[str]:
    return [line for batch in iter_line_batches(corpus, batch_lines=1000) for line in batch]


def datasets_lines(corpus: Corpus) -> list[str]:
    import datasets

    ds = datasets.load_dataset("text", data_files=list(corpus.files), split="train", streaming=True)
    return [row["text"] for row in ds if row["text"]]


@pytest.mark.usefixtures("gc_cache")
def test_text_corpus_lines_are_the_datasets_text_builders(tmp_path: Path) -> None:
    text = tmp_path / "corpus.txt"
    text.write_text(
        "first line\n\nsecond line\r\nthird  \rold mac\nform\x0cfeed and\u2028separator\n"
        "é ünïcode\n\n\nlast without newline",
        encoding="utf-8",
    )
    for corpus in (resolve_corpus(str(text)), resolve_corpus("builtin")):
        assert lines(corpus) == datasets_lines(corpus)
    assert "form\x0cfeed and\u2028separator" in lines(resolve_corpus(str(text)))


@pytest.mark.usefixtures("gc_cache")
def test_text_corpus_needs_no_datasets_json_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = tmp_path / "corpus.txt"
    text.write_text("a\nb\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets → ImportError
    assert lines(resolve_corpus(str(text))) == ["a", "b"]
    with pytest.raises(DataError, match="needs the `datasets` package"):
        lines(Corpus("json", (str(text),), "x.jsonl", "text"))
