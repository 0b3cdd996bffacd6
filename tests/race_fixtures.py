"""A race directory built as `growcockpit race` builds it, and the race run in-process
with its training replaced by a process that does nothing (the race's file handling is
what these tests look at, not training)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from growcockpit.cli import main
from growcockpit.race import build_race
from growcockpit.race.spec_file import save_spec

PLAN = Path(__file__).parent / "race" / "tiny-race.toml"


def make_race(race_dir: Path) -> dict[str, Any]:
    """The tiny race (the plan and its baseline, one rung) written to `race_dir`; its JSON."""
    spec = build_race([PLAN], [], [0], race_dir, budget_fraction=0.5)
    save_spec(race_dir, spec)
    data: dict[str, Any] = json.loads((race_dir / "race.json").read_text())
    return data


def write_spec(race_dir: Path, data: dict[str, Any]) -> None:
    (race_dir / "race.json").write_text(json.dumps(data))


class NoTraining:
    """Stands in for `spawn_backend`: records what the race asked, runs a process that exits."""

    def __init__(self) -> None:
        self.argvs: list[list[str]] = []
        self.out = ""  # the race's stdout

    def __call__(self, argv: list[str], log_path: Path, **_: object) -> subprocess.Popen[bytes]:
        self.argvs.append(argv)
        return subprocess.Popen([sys.executable, "-c", "pass"])


def run_race(
    monkeypatch: pytest.MonkeyPatch, race_dir: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, NoTraining]:
    """`growcockpit race --race-dir DIR` in-process; its exit code, stderr, and the spawns."""
    fake = NoTraining()
    monkeypatch.setattr("growcockpit.race.runs.spawn_backend", fake)
    code = main(["race", "--race-dir", str(race_dir)])
    fake.out, err = capsys.readouterr()
    return code, err, fake


def snapshot(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every entry under `root` (links not followed): its kind and a regular file's bytes."""
    out: dict[str, tuple[str, bytes]] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = ("link", str(path.readlink()).encode())
        elif path.is_file():
            out[rel] = ("file", path.read_bytes())
        else:
            out[rel] = ("dir" if path.is_dir() else "other", b"")
    return out
