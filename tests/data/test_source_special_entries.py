"""FIFOs, sockets and devices inside a `data.source` directory or glob: never opened, named.

`open()` on a FIFO blocks until a writer comes, so such an entry is never read; it used to
be dropped in silence. Beside regular files it is a warning (validation passes, the run
skips it and its start-up says so once); with no regular file left it is the source's
problem, naming it. Each check runs in a thread with a timeout, so a check that opened
the FIFO fails the test instead of hanging the suite.
"""

from __future__ import annotations

import errno
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from data_fixtures import source_plan

from growcockpit.backend.control.startup_phases import StartupClock
from growcockpit.backend.data.blocks import load_blocks
from growcockpit.backend.data.corpus import CorpusLines, DataError, builtin_files, resolve_corpus
from growcockpit.cli import main
from growcockpit.plan.data_source import SourceProblem, resolve_source
from growcockpit.plan.source_walk import walk_files
from growcockpit.plan.types import DataSpec
from growcockpit.protocol.events import Event, WarningEvent
from growcockpit.text.safe_text import quoted

T = TypeVar("T")
TIMEOUT_S = 60.0  # a check that blocked on the FIFO would never end; this one does


def unblocked(fifos: list[Path], call: Callable[[], T]) -> T:
    """`call()`, proven not to block on any of `fifos`: run in a thread with a timeout (then
    each FIFO's write end is opened so the stuck reader ends, and the test fails), and no
    reader holds a FIFO open after it (a write-only non-blocking open finds none)."""
    out: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(TIMEOUT_S)
    if thread.is_alive():
        for fifo in fifos:
            os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))
        thread.join(5)
        pytest.fail(f"the check blocked on a FIFO for {TIMEOUT_S:.0f} s")
    for fifo in fifos:
        with pytest.raises(OSError) as opened:  # ENXIO: no process has it open to read
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        assert opened.value.errno == errno.ENXIO
    if failed:
        raise failed[0]
    return out[0]


def corpus_text() -> str:
    lines = Path(builtin_files()[0]).read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(line for line in lines[:1500] if line.strip()) + "\n"


def validate(
    tmp_path: Path, source: Path | str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    plan = tmp_path / "plan.toml"
    plan.write_text(source_plan(source))
    code = main(["plan", "validate", str(plan)])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_walk_lists_fifos_and_sockets_apart_from_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("x\n")
    os.mkfifo(tmp_path / "sub" / "pipe.txt")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "s.sock"))
        walk = unblocked([tmp_path / "sub" / "pipe.txt"], lambda: walk_files(tmp_path))
    assert walk.files == (tmp_path / "a.txt",)
    assert walk.special == (tmp_path / "s.sock", tmp_path / "sub" / "pipe.txt")


def test_a_fifo_beside_data_files_is_one_warning_line_and_validation_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text(corpus_text())
    fifo = data / "b.txt"
    os.mkfifo(fifo)
    code, out, err = unblocked([fifo], lambda: validate(tmp_path, data, capsys))
    assert code == 0 and "ok (1 stage, 5 steps)" in out
    assert err == (
        f"{tmp_path / 'plan.toml'}: data.source: warning: skipping 1 entry that is not a "
        f"regular file: {fifo} (a FIFO), never opened; write its data to a regular file to "
        "train on it, or take it out of the source\n"
    )


def test_a_glob_that_matches_fifos_counts_them_and_names_the_first(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("some text\n")
    fifos = [tmp_path / "b.txt", tmp_path / "c.txt"]
    for fifo in fifos:
        os.mkfifo(fifo)
    found = unblocked(fifos, lambda: resolve_source(str(tmp_path / "*.txt")))
    assert found.files == (str(tmp_path / "a.txt"),)
    assert found.skipped == tuple(str(f) for f in fifos)
    said = resolve_corpus(str(tmp_path / "*.txt")).skipped_warning()
    assert said == (
        f"data.source = {quoted(str(tmp_path / '*.txt'))}: skipping 2 entries that are not regular "
        f"files, the first {fifos[0]} (a FIFO), never opened; write their data to regular "
        "files to train on them, or take them out of the source"
    )


@pytest.mark.parametrize("as_glob", [False, True])
def test_a_source_of_nothing_but_a_fifo_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], as_glob: bool
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "README.md").write_text("not data\n")
    fifo = data / "stream.jsonl"
    os.mkfifo(fifo)
    source = f"{data}/*.jsonl" if as_glob else str(data)
    code, out, err = unblocked([fifo], lambda: validate(tmp_path, source, capsys))
    assert code == 2 and "ok" not in out
    assert err == (
        f"{tmp_path / 'plan.toml'}:11: data.source: no regular data file there, only 1 entry "
        f"that is not a regular file: {fifo} (a FIFO), never opened; write the data to a "
        "regular .txt, .jsonl or .parquet file and give that\n"
    )
    with pytest.raises(SourceProblem, match="no regular data file there"):
        unblocked([fifo], lambda: resolve_source(source))


@pytest.mark.usefixtures("gc_cache")
def test_the_corpus_reader_skips_the_fifo_and_start_up_says_so_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text(corpus_text())
    fifo = data / "pipe.txt"
    os.mkfifo(fifo)
    events: list[Event] = []
    spec = DataSpec(source=str(data), tokenizer="train:300", seq_len=32)
    blocks = unblocked([fifo], lambda: load_blocks(spec, "gpt2", 0, StartupClock(events.append)))
    assert len(blocks.train.ids) > 0
    warnings = [e.message for e in events if isinstance(e, WarningEvent)]
    assert warnings == [
        f"data.source = {quoted(str(data))}: skipping 1 entry that is not a regular file: "
        f"{fifo} (a FIFO), never opened; write its data to a regular file to train on it, "
        "or take it out of the source"
    ]
    lines = unblocked([fifo], lambda: list(CorpusLines(resolve_corpus(str(data)))))
    assert lines and lines == [ln for ln in corpus_text().splitlines() if ln]


def test_a_file_swapped_for_a_fifo_after_resolving_is_refused_not_waited_on(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "a.txt"
    fifo.write_text("some text\n")
    corpus = resolve_corpus(str(tmp_path))
    fifo.unlink()
    os.mkfifo(fifo)
    with pytest.raises(DataError, match=f"{fifo}: not a regular file any more"):
        unblocked([fifo], lambda: list(CorpusLines(corpus)))
