"""`growcockpit note` / `growcockpit tag`: set, show, clear; bad input is one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_fixtures import write_recorded_run

from growcockpit.cli import main
from growcockpit.protocol.run_notes import RunNotes, read_notes


def _one_line_error(capsys: pytest.CaptureFixture[str], code: int, *needles: str) -> None:
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_note_and_tag_set_show_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_recorded_run(tmp_path / "r1")
    assert main(["note", str(run)]) == 0
    assert capsys.readouterr().out.strip() == "(no note)"
    assert main(["note", str(run), "  warmup too short  "]) == 0
    assert main(["tag", str(run), "best, lr-sweep"]) == 0
    assert "tags best, lr-sweep" in capsys.readouterr().out
    assert read_notes(run) == RunNotes("warmup too short", ("best", "lr-sweep"))
    assert main(["note", str(run)]) == 0 and main(["tag", str(run)]) == 0
    assert capsys.readouterr().out.splitlines() == ["warmup too short", "best, lr-sweep"]
    assert main(["tag", str(run), ""]) == 0  # the note stays
    assert read_notes(run) == RunNotes("warmup too short", ())


def test_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_recorded_run(tmp_path / "r1")
    _one_line_error(capsys, main(["tag", str(run), "ok,no/slash"]), 'tag "no/slash"', "e.g.")
    _one_line_error(capsys, main(["note", str(run), "a\nb"]), "note:", "one line")
    _one_line_error(capsys, main(["note", str(tmp_path / "nope"), "x"]), "no such run directory")
    (tmp_path / "empty").mkdir()
    _one_line_error(capsys, main(["tag", str(tmp_path / "empty"), "x"]), "not a growcockpit run")
    (run / "notes.json").symlink_to(tmp_path / "elsewhere.json")
    _one_line_error(capsys, main(["note", str(run), "x"]), "symbolic link")
    assert not (tmp_path / "elsewhere.json").exists()


@pytest.mark.parametrize("bad", [b'{"note": "half', b"\xff\xfe", b"[1, 2]", b'{"tags": "x"}'])
def test_a_corrupt_notes_file_is_moved_aside_when_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: bytes
) -> None:
    """ "Set the note again" used to fail with the same error. Showing still
    says what is wrong; setting moves the bad file aside, says so, and sets the note."""
    run = write_recorded_run(tmp_path / "r1")
    (run / "notes.json").write_bytes(bad)
    _one_line_error(capsys, main(["note", str(run)]), "notes.json", "set the note or tags again")
    assert main(["note", str(run), "fixed"]) == 0
    out, err = capsys.readouterr()
    assert "r1: note set" in out
    assert err.count("\n") == 1 and "moved aside to notes.json.corrupt" in err, err
    assert (run / "notes.json.corrupt").read_bytes() == bad, "nothing lost"
    assert read_notes(run) == RunNotes("fixed", ())
    (run / "notes.json").write_bytes(bad)
    assert main(["tag", str(run), "best"]) == 0
    assert read_notes(run) == RunNotes("", ("best",))
