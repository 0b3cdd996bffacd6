"""A tiny CPU race with real runs: killed mid-way, run again, finished; the result read back.

One race of the tiny plan against its full-depth baseline (one rung at half the budget,
the winner continued to the full budget). It is killed (SIGKILL, the whole process
group, a training run included) as soon as the first candidate has reported its rung,
then started again with the same command: the measured candidate keeps its value and
is not trained again, the interrupted one resumes, and the winner finishes its plan.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from growcockpit.compare import load_progress
from growcockpit.protocol import read_all
from growcockpit.protocol.events import RunStarted
from growcockpit.protocol.rundir import RunPaths
from growcockpit.race.study import STUDY_FILE, open_study, trials_by_key

PLAN = Path(__file__).with_name("tiny-race.toml")


def _race(race_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "growcockpit", "race", str(PLAN), "--budget-fraction", "0.5",
        "--no-depth-controls", "--no-short-controls", "--race-dir", str(race_dir), *extra,
    ]  # fmt: skip


def _measured(race_dir: Path) -> dict[str, float]:
    if not (race_dir / STUDY_FILE).exists():
        return {}
    trials = trials_by_key(open_study(race_dir))
    return {k: t.intermediate_values[0] for k, t in trials.items() if 0 in t.intermediate_values}


@pytest.mark.slow
def test_race_killed_midway_resumes_and_finishes(tmp_path: Path) -> None:
    race_dir = tmp_path / "race"
    first = subprocess.Popen(
        _race(race_dir), start_new_session=True, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 240
    try:
        while not _measured(race_dir) and first.poll() is None:
            assert time.monotonic() < deadline, "no candidate measured in time"
            time.sleep(0.5)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    before = _measured(race_dir)
    assert len(before) == 1, before  # killed mid-way: one measured, one not
    done = subprocess.run(
        _race(race_dir, "--json", str(tmp_path / "race.json")),
        capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((tmp_path / "race.json").read_text())
    rows = {r["key"]: r for r in result["rows"]}
    assert len(rows) == 2 and sum(r["baseline"] for r in rows.values()) == 1
    ((key, value),) = before.items()
    assert rows[key]["rung_losses"] == [value]  # kept, not measured again
    runs = {k: Path(r["runs"][0]) for k, r in rows.items()}
    starts = [e for e in read_all(RunPaths(runs[key]).events) if isinstance(e, RunStarted)]
    assert [e.resumed_from is None for e in starts][0]
    assert sum(e.resumed_from is None for e in starts) == 1  # trained once, resumed after
    winner = result["winner"]
    assert winner in rows and rows[winner]["state"] == "finished"
    assert rows[winner]["final_loss"] is not None
    won = load_progress(runs[winner])
    assert won.status == "completed" and won.step == won.total_steps
    (loser,) = set(rows) - {winner}
    assert rows[loser]["state"] == "cut" and rows[loser]["cut_at"] == 0
    lost = load_progress(runs[loser])
    # cut at the rung: stopped there, or (tiny steps on a quiet machine: a stop lands at a
    # step boundary, after the plan's last steps) at its own end, never continued after
    assert lost.status in ("stopped", "completed") and won.total_steps
    assert lost.step <= (lost.total_steps or 0)
    starts_lost = [e for e in read_all(RunPaths(runs[loser]).events) if isinstance(e, RunStarted)]
    assert len(starts_lost) <= 2  # trained to the rung (and at most resumed once to reach it)
    # equal compute: both were measured at the rung, and used at least that much
    rung = result["rungs"][0]
    assert all(r["race_flops"] >= rung for r in rows.values())
    assert result["race_flops"] == pytest.approx(sum(r["race_flops"] for r in rows.values()))
    assert "winner: " in done.stdout and "race compute:" in done.stdout
    if not rows[winner]["baseline"]:
        assert "counting the race's own compute" in done.stdout
