"""Fuzz over race directories: mutated race.json and journal lines, links and FIFOs
planted where the race's entries go. `growcockpit race --race-dir` and the cockpit's race
view answer each in one line or run: 0 tracebacks, 0 hangs, 0 writes or deletes outside
the race directory (a sibling sentinel directory, and the links' targets in it, compared
byte for byte before and after). Training is replaced by a process that exits: what is
fuzzed is the race's file handling."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from race_fixtures import make_race, snapshot

from growcockpit.cli import main
from growcockpit.race.study import STUDY_FILE
from growcockpit.session.race_view import RaceReadError, list_races, load_race_view

HANG_S = 20
RUN = "RUN"  # stands for the first candidate's run name in an entry
ENTRIES = (
    "race.json", "study.journal", "stop", "runs", f"runs/{RUN}", f"runs/{RUN}/events.jsonl",
    f"runs/{RUN}/checkpoints", f"runs/{RUN}/status.json", "plans", f"plans/{RUN}.toml",
    "logs", f"logs/{RUN}.log", "locks", "locks/race.lock", "locks/journal.lock",
    "locks/workers.lock", "pids", f"pids/{RUN}.json",
)  # fmt: skip
KINDS = ("link-to-dir", "link-to-file", "dangling-link", "fifo")
FIELDS = ("eta", "keep", "rungs", "seeds", "budget_flops", "budget_fraction", "finish",
          "candidates", "c.key", "c.runs", "c.plan_files", "c.sets", "c.controls",
          "c.baseline", "extra")  # fmt: skip

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
journal_lines = st.one_of(
    st.binary(max_size=60),
    st.builds(
        lambda op, extra: json.dumps({"op_code": op, "worker_id": "w", **extra}).encode(),
        st.integers(-1, 11),
        st.dictionaries(
            st.sampled_from(
                [
                    "study_id",
                    "trial_id",
                    "state",
                    "values",
                    "step",
                    "user_attr",
                    "intermediate_value",
                    "datetime_start",
                    "datetime_complete",
                    "study_name",
                    "directions",
                    "user_attrs",
                    "intermediate_values",
                ]
            ),
            json_values,
            max_size=4,
        ),  # fmt: skip
    ),
    st.integers(1, 3000).map(lambda n: b"[" * n + b"]" * n),
    st.builds(  # well-formed lines a race never wrote: deletes, states, values, claims
        lambda op, i, state, value, key: json.dumps(
            {
                "op_code": op,
                "worker_id": "w",
                "study_id": i,
                "trial_id": i,
                "step": i,
                "state": state,
                "values": [value],
                "intermediate_value": value,
                "datetime_start": "2026-01-01T00:00:00",
                "datetime_complete": "2026-01-01T00:00:01",
                "user_attr": {key: value},
                "system_attr": {key: value},
                "study_name": "race",
                "directions": [state % 3],
            }
        ).encode(),
        st.sampled_from([0, 1, 2, 3, 4, 6, 7, 8, 9]),
        st.integers(0, 3),
        st.integers(0, 4),
        st.floats(),
        st.sampled_from(["candidate", "flops_0", "baseline", "x"]),
    ),  # fmt: skip
)


class Hang(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang()


class ExitsAtOnce:
    """A stand-in for a backend process: already finished (its pid one that is gone)."""

    def __init__(self, gone_pid: int) -> None:
        self.pid = gone_pid

    def poll(self) -> int:
        return 0

    def wait(self, timeout: float | None = None) -> int:
        return 0

    def terminate(self) -> None:
        pass


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, int]]:
    """A race directory whose race ran once without training (a real journal), its first
    run's name, and a pid that is gone."""
    root = tmp_path_factory.mktemp("race-template")
    race_dir = root / "race"
    data = make_race(race_dir)
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("growcockpit.race.runs.spawn_backend", lambda *a, **k: ExitsAtOnce(done.pid))
        main(["race", "--race-dir", str(race_dir)])
    assert (race_dir / STUDY_FILE).stat().st_size > 0
    yield race_dir, Path(data["candidates"][0]["runs"][0]).name, done.pid


def _set_field(data: dict[str, Any], field: str, value: object, sentinel: Path) -> None:
    if field == "extra":
        data["extra"] = value
    elif field.startswith("c."):
        if data["candidates"] and isinstance(data["candidates"], list):
            name = field[2:]
            data["candidates"][0][name] = (
                [str(sentinel / "victim")] if name in ("runs", "plan_files") and value is None
                else value
            )  # fmt: skip
    else:
        data[field] = value


def _plant(race_dir: Path, entry: str, kind: str, sentinel: Path) -> None:
    path = race_dir / entry
    if not path.parent.is_dir() or path.parent.is_symlink():
        return
    if path.is_symlink() or path.is_file() or path.is_fifo():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    target = {
        "link-to-dir": sentinel / "victim",
        "link-to-file": sentinel / "victim" / "thesis.tex",
        "dangling-link": sentinel / "absent",
    }.get(kind)
    if target is None:
        os.mkfifo(path)
    else:
        os.symlink(target, path)


@settings(
    max_examples=int(os.environ.get("FUZZ_N", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    spec_mode=st.integers(0, 5),  # 0: random bytes, 1-2: fields changed, else as written
    fields=st.lists(st.tuples(st.sampled_from(FIELDS), json_values), min_size=1, max_size=2),
    spec_bytes=st.binary(max_size=80),
    journal_mode=st.integers(0, 2),  # 0: lines inserted, else as written
    lines=st.lists(st.tuples(st.integers(0, 60), journal_lines), min_size=1, max_size=2),
    torn=st.booleans(),
    planted=st.lists(
        st.tuples(st.sampled_from(ENTRIES), st.sampled_from(KINDS)),
        max_size=3,
        unique_by=lambda t: t[0],
    ),
)
def test_a_hostile_race_dir_is_one_line_never_a_traceback_hang_or_outside_write(
    template: tuple[Path, str, int],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    spec_mode: int,
    fields: list[tuple[str, object]],
    spec_bytes: bytes,
    journal_mode: int,
    lines: list[tuple[int, bytes]],
    torn: bool,
    planted: list[tuple[str, str]],
) -> None:
    base, run, gone_pid = template
    box = Path(tempfile.mkdtemp(dir=base.parent))
    race_dir, sentinel = box / "race", box / "sentinel"
    shutil.copytree(base, race_dir, symlinks=True)
    (sentinel / "victim" / run).mkdir(parents=True)
    (sentinel / "victim" / "thesis.tex").write_text("years of work\n")
    data = json.loads((race_dir / "race.json").read_text())
    for field, value in fields if spec_mode in (1, 2) else []:
        _set_field(data, field, value, sentinel)
    spec = spec_bytes if spec_mode == 0 else json.dumps(data).encode()
    (race_dir / "race.json").write_bytes(spec)
    journal = (race_dir / STUDY_FILE).read_bytes().splitlines(keepends=True)
    for at, line in lines if journal_mode == 0 else []:
        journal.insert(min(at, len(journal)), line.replace(b"\n", b" ") + b"\n")
    (race_dir / STUDY_FILE).write_bytes(b"".join(journal) + (b'{"op_code":7,"wor' if torn else b""))
    for entry, kind in planted:
        _plant(race_dir, entry.replace(RUN, run), kind, sentinel)
    before = snapshot(sentinel)
    outside = sorted(os.listdir(box))

    monkeypatch.setattr(
        "growcockpit.race.runs.spawn_backend", lambda *a, **k: ExitsAtOnce(gone_pid)
    )
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_S)
    try:
        code = main(["race", "--race-dir", str(race_dir)])
        out, err = capsys.readouterr()
        try:
            load_race_view(race_dir)
        except RaceReadError as exc:
            assert "\n" not in str(exc)
        list_races(box)
    except Hang:
        pytest.fail(f"hung over {HANG_S} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    topic = next((t for t in ("link", "FIFO", "race.json", "journal") if t in err), "other")
    event(f"exit {code}" + (f": {topic}" if code == 2 else ""))
    assert code in (0, 1, 2), (code, err)
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("growcockpit: "), err
    assert "Traceback" not in err + out
    assert snapshot(sentinel) == before
    assert sorted(os.listdir(box)) == outside
    shutil.rmtree(box, ignore_errors=True)
