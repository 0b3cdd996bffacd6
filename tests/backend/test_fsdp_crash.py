"""A rank killed mid-step under FSDP (2 gloo ranks): the run is `crashed` with the dead
rank named (event, status.json, `growcockpit status`), and `growcockpit resume` takes it
up from its last sharded checkpoint to the end."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from repo_paths import TESTS

from growcockpit.protocol import read_all
from growcockpit.protocol.events import RunFinished, RunStarted, Step

pytestmark = pytest.mark.slow


def worker_pid(run_dir: Path, rank: int) -> int | None:
    """The pid of the torchrun worker of `rank` training in `run_dir` (its environment)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            env = (proc / "environ").read_bytes().split(b"\0")
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        worker = f"RANK={rank}".encode() in env and b"GROWCOCKPIT_WORKER=1" in env
        if worker and str(run_dir).encode() in cmdline:
            return int(proc.name)
    return None


def last_step(run_dir: Path) -> int:
    events = run_dir / "events.jsonl"
    if not events.exists():
        return 0
    steps = [e.step for e in read_all(events) if isinstance(e, Step)]
    return max(steps, default=0)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds the rank via /proc")
def test_killed_rank_is_named_and_the_run_resumes(tmp_path: Path, gc_cache: Path) -> None:
    text = (TESTS / "plans" / "tiny-fsdp.toml").read_text()
    cut = text.rindex("steps = 20")  # the grow stage: 40 steps, time to kill mid-run
    plan = tmp_path / "long.toml"
    plan.write_text(text[:cut] + "steps = 40" + text[cut + len("steps = 20") :])
    run_dir = tmp_path / "run"
    env = dict(os.environ, GROWCOCKPIT_CACHE=str(gc_cache), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "growcockpit", "train", str(plan), "--run-dir", str(run_dir)]
    proc = subprocess.Popen(
        [*cmd, "--nproc-per-node", "2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
    )
    try:
        deadline = time.monotonic() + 240
        while last_step(run_dir) < 25 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        victim = worker_pid(run_dir, 1)
        assert victim is not None and proc.poll() is None, "the run ended before the kill"
        os.kill(victim, signal.SIGKILL)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    killed_at = last_step(run_dir)
    assert 25 <= killed_at < 60, out.decode()[-2000:]

    named = re.compile(rf"rank 1 \(pid {victim}\) died mid-run at step \d+")
    finished = [e for e in read_all(run_dir / "events.jsonl") if isinstance(e, RunFinished)]
    assert finished[-1].status == "crashed" and named.search(finished[-1].message)
    assert f"growcockpit resume {run_dir}" in finished[-1].message
    assert json.loads((run_dir / "status.json").read_text())["state"] == "crashed"
    shown = subprocess.run(
        [sys.executable, "-m", "growcockpit", "status", str(run_dir)],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert "crashed" in shown.stdout and named.search(shown.stdout)

    resumed = subprocess.run(
        [sys.executable, "-m", "growcockpit", "resume", str(run_dir), "--nproc-per-node", "2"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    events = list(read_all(run_dir / "events.jsonl"))
    restart = max(i for i, e in enumerate(events) if isinstance(e, RunStarted))
    started = events[restart]
    assert isinstance(started, RunStarted) and started.world_size == 2
    back_to = int(str(started.resumed_from).rsplit("step-", 1)[1])
    assert 20 <= back_to <= killed_at  # the last checkpoint written before the kill
    steps = sorted(e.step for e in events[restart:] if isinstance(e, Step))
    assert steps == list(range(back_to + 1, 61))
    assert json.loads((run_dir / "status.json").read_text())["state"] == "completed"
