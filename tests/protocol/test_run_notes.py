"""Run notes and tags: kept in the run directory, checked on the way in and out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from growcockpit.protocol.run_notes import (
    MAX_NOTE_CHARS,
    MAX_NOTES_BYTES,
    RunNotes,
    note_problem,
    parse_tags,
    read_notes,
    read_notes_quietly,
    tags_problem,
    write_notes,
)
from growcockpit.protocol.run_safety import check_run_dir
from growcockpit.protocol.rundir import RunPaths
from growcockpit.protocol.safe_fs import RunDirError, UnsafePath


def test_round_trip_and_atomic_replace(tmp_path: Path) -> None:
    assert read_notes(tmp_path) == RunNotes()
    write_notes(tmp_path, RunNotes("lr 2e-3 beats the baseline", ("best", "lr-sweep")))
    assert read_notes(tmp_path) == RunNotes("lr 2e-3 beats the baseline", ("best", "lr-sweep"))
    write_notes(tmp_path, RunNotes("", ()))
    assert read_notes(tmp_path) == RunNotes()
    assert oct(os.stat(RunPaths(tmp_path).notes).st_mode & 0o777) == "0o600"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.json"]  # no temp file left


def test_parse_tags() -> None:
    assert parse_tags("a, b c,,#d a") == ("a", "b", "c", "d")
    assert parse_tags("  ") == ()
    for bad in ("-x", "a/b", "x" * 33, "é"):
        with pytest.raises(ValueError, match="tag"):
            parse_tags(bad)
    with pytest.raises(ValueError, match="at most"):
        parse_tags(",".join(f"t{i}" for i in range(17)))
    assert tags_problem("ok,fine") == "" and 'tag "../x"' in tags_problem("../x")


def test_note_problem() -> None:
    assert note_problem("fine") == ""
    assert "at most" in note_problem("x" * (MAX_NOTE_CHARS + 1))
    assert "one line" in note_problem("two\nlines")
    assert "one line" in note_problem("bidi \u202e trick")
    with pytest.raises(ValueError):
        write_notes(Path("."), RunNotes("a\x1b[2Jb"))


def test_summary_cuts() -> None:
    notes = RunNotes("a long note about this run", ("best",))
    assert notes.summary(80) == "#best a long note about this run"
    assert notes.summary(10) == "#best a l…" and len(notes.summary(10)) == 10


@pytest.mark.parametrize(
    "content, needle",
    [
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"note": 3}', "note"),
        (b'{"note": "a\\nb"}', "note"),
        (b'{"tags": "best"}', "tags"),
        (b'{"tags": ["../etc"]}', "tag"),
    ],
)
def test_hostile_file_is_one_line(tmp_path: Path, content: bytes, needle: str) -> None:
    RunPaths(tmp_path).notes.write_bytes(content)
    with pytest.raises(RunDirError, match=needle) as err:
        read_notes(tmp_path)
    assert "\n" not in str(err.value)
    assert read_notes_quietly(tmp_path) == RunNotes()


def test_links_fifos_and_huge_files_refused(tmp_path: Path) -> None:
    notes = RunPaths(tmp_path).notes
    secret = tmp_path / "secret.json"
    secret.write_text('{"note": "secret"}')
    notes.symlink_to(secret)
    with pytest.raises(UnsafePath, match="symbolic link"):
        read_notes(tmp_path)
    with pytest.raises(UnsafePath):
        write_notes(tmp_path, RunNotes("x"))
    assert secret.read_text() == '{"note": "secret"}'
    with pytest.raises(UnsafePath):
        check_run_dir(tmp_path, writing=False)  # the run-dir check knows the name too
    notes.unlink()
    os.mkfifo(notes)
    with pytest.raises(UnsafePath, match="FIFO"):
        read_notes(tmp_path)  # refused, never blocks
    notes.unlink()
    notes.write_bytes(b" " * (MAX_NOTES_BYTES + 1))
    with pytest.raises(UnsafePath, match="limit"):
        read_notes(tmp_path)
