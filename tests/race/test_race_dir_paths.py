"""A race directory's paths: derived from the directory and the key, every entry lstat'ed,
and only directories the race made are ever deleted (growcockpit/race/race_dir.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from race_fixtures import make_race, run_race, snapshot, write_spec

from growcockpit.race.race_dir import MARKER, RaceDirError, remake_run_dir, run_path
from growcockpit.race.spec_file import load_spec


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    (victim / "precious").mkdir(parents=True)
    (victim / "precious" / "thesis.tex").write_text("years of work\n")
    return victim


def test_a_runs_entry_pointing_outside_is_never_deleted_or_trained_into(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    race_dir = tmp_path / "race"
    data = make_race(race_dir)
    victim = _victim(tmp_path)
    before = snapshot(victim)
    data["candidates"][0]["runs"] = [str(victim / "precious")]
    data["candidates"][0]["plan_files"] = [str(victim / "precious" / "thesis.tex")]
    write_spec(race_dir, data)
    code, err, fake = run_race(monkeypatch, race_dir, capsys)
    assert snapshot(victim) == before
    run_dirs = [Path(a[a.index("--run-dir") + 1]) for a in fake.argvs if a[0] == "train"]
    assert run_dirs and all(d.parent == race_dir / "runs" for d in run_dirs), fake.argvs
    assert all(str(victim) not in " ".join(a) for a in fake.argvs)
    assert "Traceback" not in err


def test_a_symlinked_runs_dir_is_refused_and_the_directory_behind_it_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    race_dir = tmp_path / "race"
    data = make_race(race_dir)
    victim = _victim(tmp_path)
    name = Path(data["candidates"][0]["runs"][0]).name
    (victim / name).mkdir()
    (victim / name / "keep.txt").write_text("mine\n")
    before = snapshot(victim)
    os.symlink(victim, race_dir / "runs")
    code, err, fake = run_race(monkeypatch, race_dir, capsys)
    assert snapshot(victim) == before
    assert code == 2 and not fake.argvs
    assert err.count("\n") == 1 and "runs: is a symbolic link" in err, err


def test_a_symlinked_run_entry_logs_or_locks_dir_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for planted in ("runs/ENTRY", "logs", "locks", "plans/ENTRY.toml"):
        race_dir = tmp_path / planted.replace("/", "_") / "race"
        data = make_race(race_dir)
        victim = _victim(race_dir.parent)
        entry = Path(data["candidates"][0]["runs"][0]).name
        at = race_dir / planted.replace("ENTRY", entry)
        at.parent.mkdir(exist_ok=True)
        if at.is_file():
            at.unlink()
        os.symlink(victim / "precious", at)
        before = snapshot(victim)
        code, err, fake = run_race(monkeypatch, race_dir, capsys)
        assert snapshot(victim) == before, planted
        assert code == 2 and "is a symbolic link" in err and err.count("\n") == 1, (planted, err)


def test_paths_come_from_the_race_dir_and_key_not_from_race_json(tmp_path: Path) -> None:
    race_dir = tmp_path / "race"
    data = make_race(race_dir)
    data["candidates"][0]["runs"] = ["/etc"]
    write_spec(race_dir, data)
    spec = load_spec(race_dir)
    assert spec is not None
    for c in spec.candidates:
        assert c.runs == [str(run_path(race_dir, c.key, 0))]
        assert Path(c.plan_files[0]).parent == race_dir / "plans"


@pytest.mark.parametrize("key", ["../escape", "/abs", "a/b", ".hidden", "", "x" * 81, 7])
def test_a_key_that_is_not_one_plain_name_is_refused(tmp_path: Path, key: object) -> None:
    race_dir = tmp_path / "race"
    data = make_race(race_dir)
    data["candidates"][0]["key"] = key
    write_spec(race_dir, data)
    with pytest.raises(RaceDirError, match="race.json: race.candidates\\[0\\].key"):
        load_spec(race_dir)


def test_only_a_run_directory_the_race_marked_is_deleted(tmp_path: Path) -> None:
    race_dir = tmp_path / "race"
    make_race(race_dir)
    run = race_dir / "runs" / "someone-s0"
    run.mkdir(parents=True)
    (run / "events.jsonl").write_text("")
    with pytest.raises(RaceDirError, match="did not make"):
        remake_run_dir(run)
    assert (run / "events.jsonl").exists()
    (run / MARKER).write_bytes(b"something else\n")
    with pytest.raises(RaceDirError, match="did not make"):
        remake_run_dir(run)
    remake_run_dir(run.with_name("fresh-s0"))  # made, marked; a second call deletes it
    (run.with_name("fresh-s0") / "events.jsonl").write_text("old\n")
    remake_run_dir(run.with_name("fresh-s0"))
    assert sorted(os.listdir(run.with_name("fresh-s0"))) == [MARKER]


def test_a_bad_race_json_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    race_dir = tmp_path / "race"
    data = make_race(race_dir)
    bad = {
        "not json": "{",
        "binary": "\udcff",
        "deep": "[" * 100_000,
        "ill-typed": json.dumps({**data, "eta": "2"}),
        "unknown field": json.dumps({**data, "evil": 1}),
        "no candidates": json.dumps({**data, "candidates": []}),
        "a list": "[1, 2]",
    }
    for what, text in bad.items():
        (race_dir / "race.json").write_bytes(text.encode("utf-8", "surrogateescape"))
        code, err, fake = run_race(monkeypatch, race_dir, capsys)
        assert code == 2 and err.count("\n") == 1 and "race.json" in err, (what, err)
        assert "Traceback" not in err and not fake.argvs, what
    (race_dir / "race.json").unlink()
    os.mkfifo(race_dir / "race.json")
    code, err, _ = run_race(monkeypatch, race_dir, capsys)
    assert code == 2 and "is a FIFO" in err
