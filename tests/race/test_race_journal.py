"""`study.journal` as untrusted input: links and FIFOs refused, a torn last line dropped
and said, damaged lines and double claims one line each (growcockpit/race/journal.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from race_fixtures import make_race, run_race

from growcockpit.race.journal import check_line
from growcockpit.race.study import STUDY_FILE


def _raced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    """A race directory whose race ran once (without training): a real journal."""
    race_dir = tmp_path / "race"
    make_race(race_dir)
    run_race(monkeypatch, race_dir, capsys)
    assert (race_dir / STUDY_FILE).read_bytes().count(b"\n") > 5
    return race_dir


def test_a_symlinked_journal_is_refused_and_its_target_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    race_dir = tmp_path / "race"
    make_race(race_dir)
    target = tmp_path / "bashrc"
    target.write_text("export PATH=/usr/bin\n")
    os.symlink(target, race_dir / STUDY_FILE)
    code, err, fake = run_race(monkeypatch, race_dir, capsys)
    assert target.read_text() == "export PATH=/usr/bin\n"
    assert code == 2 and err.count("\n") == 1 and "is a symbolic link" in err, err
    assert not fake.argvs


def test_a_fifo_journal_is_refused_without_hanging(tmp_path: Path) -> None:
    race_dir = tmp_path / "race"
    make_race(race_dir)
    os.mkfifo(race_dir / STUDY_FILE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "growcockpit", "race", "--race-dir", str(race_dir)],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert done.returncode == 2 and "is a FIFO" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1


def test_a_torn_last_line_is_dropped_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    race_dir = _raced(tmp_path, monkeypatch, capsys)
    journal = race_dir / STUDY_FILE
    whole = journal.read_bytes()
    journal.write_bytes(whole + b'{"op_code":7,"worker_id":"x","trial_id":0,"st')
    code, err, fake = run_race(monkeypatch, race_dir, capsys)
    assert "dropped a torn last line" in fake.out and "Traceback" not in err, (fake.out, err)
    assert journal.read_bytes().startswith(whole) and journal.read_bytes().endswith(b"\n")


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"garbage here", "not JSON"),
        (b"\xff\xfe\x00binary", "not UTF-8"),
        (b"[" * 5000 + b"]" * 5000, "nested"),
        (b'{"op_code": 42, "worker_id": "w"}', "op code 42"),
        (b'{"op_code": 5, "worker_id": "w"}', "op code 5"),
        (
            b'{"op_code": 7, "worker_id": "w", "trial_id": 0, "step": "x", "intermediate_value": 1}',
            "step",
        ),
        (
            b'{"op_code": 6, "worker_id": "w", "trial_id": 0, "state": 1, "values": [1, 2]}',
            "values",
        ),
        (b'{"op_code": 6, "worker_id": "w", "trial_id": 0, "state": 1, "values": [1]}', "no time"),
        (
            b'{"op_code": 4, "worker_id": "w", "study_id": 0, "datetime_start": "yesterday"}',
            "datetime",
        ),
        (b"7", "not a JSON object"),
    ],
    ids=["garbage", "binary", "deep", "op42", "op5", "step", "values", "time", "date", "int"],
)
def test_a_damaged_line_is_one_line_saying_how_to_recover(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    line: bytes,
    why: str,
) -> None:
    race_dir = _raced(tmp_path, monkeypatch, capsys)
    journal = race_dir / STUDY_FILE
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:3]) + line + b"\n" + b"".join(lines[3:]))
    code, err, fake = run_race(monkeypatch, race_dir, capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "line 4:" in err and why in err and "move it aside" in err, err
    assert not fake.argvs
    assert check_line(line)[0] is None


def test_a_second_trial_claiming_a_candidate_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    race_dir = _raced(tmp_path, monkeypatch, capsys)
    journal = race_dir / STUDY_FILE
    logs = [json.loads(x) for x in journal.read_text().splitlines()]
    claim = next(x for x in logs if x["op_code"] == 8 and "candidate" in x["user_attr"])
    study = next(x for x in logs if x["op_code"] == 4)
    with journal.open("a") as fh:
        fh.write(json.dumps({**study, "worker_id": "intruder"}) + "\n")
        trials = sum(x["op_code"] == 4 for x in logs)
        fh.write(json.dumps({**claim, "worker_id": "intruder", "trial_id": trials}) + "\n")
    code, err, fake = run_race(monkeypatch, race_dir, capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert f"both claim candidate {claim['user_attr']['candidate']!r}" in err, err
    assert not fake.argvs


def test_moving_a_damaged_journal_aside_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    race_dir = _raced(tmp_path, monkeypatch, capsys)
    journal = race_dir / STUDY_FILE
    journal.write_bytes(journal.read_bytes() + b"garbage\n")
    code, err, _ = run_race(monkeypatch, race_dir, capsys)
    assert code == 2
    journal.rename(journal.with_suffix(".bad"))
    code, err, _ = run_race(monkeypatch, race_dir, capsys)
    assert code in (0, 1) and "Traceback" not in err, err  # 1: its runs failed (no training)
