"""A race's backends live no longer than the race; a re-run stops what a killed one left
(only processes proven to be its backends); their overrun is not billed
(growcockpit/race/supervise.py, runs.billed_flops)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from race_fixtures import PLAN, make_race

from growcockpit.protocol.rundir import process_start_time, read_status
from growcockpit.race.halving import Point
from growcockpit.race.race_dir import PIDS
from growcockpit.race.runs import RunState
from growcockpit.race.supervise import ENV_KEY, record, stop_orphan


def _sleeper(env_run: Path | None) -> subprocess.Popen[bytes]:
    """A process that looks like a backend (`growcockpit` in its command line)."""
    env = dict(os.environ)
    if env_run is not None:
        env[ENV_KEY] = str(env_run.resolve())
    code = "import time; time.sleep(120)"
    return subprocess.Popen([sys.executable, "-c", code, "growcockpit"], env=env)


def test_a_rerun_stops_the_orphan_it_can_prove_and_nothing_else(tmp_path: Path) -> None:
    race_dir = tmp_path / "race"
    runs = [race_dir / "runs" / f"c{i}-s0" for i in range(3)]
    for run in runs:
        run.mkdir(parents=True)
    orphan = _sleeper(runs[0])  # the backend a killed race left: proven, stopped
    stranger = _sleeper(None)  # a growcockpit process of another run: not ours
    procs = [orphan, stranger]
    try:
        time.sleep(0.3)
        record(runs[0], orphan.pid)
        record(runs[1], stranger.pid)
        (race_dir / PIDS / f"{runs[2].name}.json").write_text(
            json.dumps({"pid": os.getpid(), "started": 12.0})  # a reused pid: not ours either
        )
        said: list[str] = []
        stopped = [stop_orphan(run, said.append, wait_s=10) for run in runs]
        assert stopped == [True, False, False]
        assert orphan.wait(timeout=10) == -signal.SIGTERM
        assert stranger.poll() is None
        assert said == [
            f"{runs[0].name}: stopping its backend (pid {orphan.pid}), left training by a "
            "killed race"
        ]
        assert not list((race_dir / PIDS).iterdir())  # every record read is forgotten
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_planted_pid_record_is_refused(tmp_path: Path) -> None:
    race_dir = tmp_path / "race"
    run = race_dir / "runs" / "c-s0"
    run.mkdir(parents=True)
    (race_dir / PIDS).mkdir()
    victim = tmp_path / "victim.json"
    victim.write_text(json.dumps({"pid": os.getpid(), "started": process_start_time(os.getpid())}))
    os.symlink(victim, race_dir / PIDS / "c-s0.json")
    from growcockpit.race.race_dir import RaceDirError

    with pytest.raises(RaceDirError, match="is a symbolic link"):
        stop_orphan(run, print, wait_s=1)
    assert victim.exists()


def test_overrun_after_the_rung_is_not_billed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A backend a killed race left ran to its plan's end: the rung bills what measuring
    it there took (its first evaluation past the rung), not the whole budget."""
    race_dir = tmp_path / "race"
    data = make_race(race_dir)
    rung, budget = data["rungs"][0], data["budget_flops"]
    calls = itertools.count()

    def ran_on(*args: object, **kwargs: object) -> RunState:
        worse = 0.1 * next(calls)  # distinct losses: a tie would keep every candidate racing
        points = [Point(0.4 * rung, 3.0 + worse), Point(1.1 * rung, 2.9 + worse)]
        return RunState([*points, Point(budget, 2.0 + worse)], budget, True, "completed")

    monkeypatch.setattr("growcockpit.race.study.advance_run", ran_on)
    out = tmp_path / "result.json"
    from growcockpit.cli import main

    assert main(["race", "--race-dir", str(race_dir), "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    cut = [r for r in rows if r["cut_at"] == 0]  # measured at the first rung only
    assert cut and [r["race_flops"] for r in cut] == [pytest.approx(1.1 * rung)] * len(cut)
    capsys.readouterr()


def _slow_plan(tmp_path: Path) -> Path:
    text = PLAN.read_text().replace("steps = 6", "steps = 20000")
    path = tmp_path / "slow-race.toml"
    path.write_text(text.replace('name = "tiny-race"', 'name = "slow-race"'))
    return path


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_sigkilled_race_leaves_no_backend_training(tmp_path: Path) -> None:
    race_dir = tmp_path / "race"
    race = subprocess.Popen(
        [sys.executable, "-m", "growcockpit", "race", str(_slow_plan(tmp_path)),
         "--race-dir", str(race_dir), "--budget-fraction", "0.5"],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        status = None
        while status is None or status.step < 2 or status.state != "running":
            assert time.monotonic() < deadline and race.poll() is None, "no run trained in time"
            time.sleep(0.5)
            runs = sorted((race_dir / "runs").glob("*/status.json"))
            status = read_status(runs[0].parent) if runs else None
        run_dir = runs[0].parent
        race.send_signal(signal.SIGKILL)  # the race alone, not its process group
        race.wait()
        deadline = time.monotonic() + 60
        while read_status(run_dir).is_live():
            assert time.monotonic() < deadline, "the backend trained on after its race died"
            time.sleep(0.5)
        final = read_status(run_dir)
        assert final.state == "stopped" and final.step < 20000, final
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(race.pid, signal.SIGKILL)  # whatever is left of the race's group
        race.wait()
