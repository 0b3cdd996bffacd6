"""Resume at its edges: completed runs, truncated checkpoints, `--from`, and liveness beyond the pid."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from run_fixtures import of_type, tiny_plan

from growcockpit.cli import main
from growcockpit.protocol import RunStatus, read_all, read_status, write_status
from growcockpit.protocol.events import RolledBack, RunStarted, Step
from growcockpit.protocol.rundir import process_start_time
from growcockpit.session.run_state import RunState


def _status(**kw: object) -> RunStatus:
    return RunStatus(run_id="r", state="running", **kw)  # type: ignore[arg-type]


def test_a_reused_pid_is_not_a_live_backend() -> None:
    me = os.getpid()
    started = process_start_time(me)
    assert started is not None
    assert _status(pid=me, pid_started=started).backend_alive()
    assert not _status(pid=me, pid_started=started - 3600).backend_alive(), (
        "same pid, other start time: the pid was reused"
    )


def test_without_a_start_time_the_heartbeat_decides() -> None:
    me = os.getpid()
    fresh, stale = _status(pid=me), _status(pid=me)
    fresh.heartbeat, stale.heartbeat = time.time(), time.time() - 3600
    assert fresh.backend_alive() and not stale.backend_alive()


def test_a_dead_pid_is_dead() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert not _status(pid=proc.pid, pid_started=1.0, heartbeat=time.time()).backend_alive()


def test_reused_pid_shows_crashed_and_does_not_block_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = _status(pid=os.getpid(), pid_started=12345.0)
    write_status(tmp_path / "status.json", status)
    assert read_status(tmp_path).state == "crashed"
    assert main(["resume", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "still live" not in err and "no usable checkpoint" in err


@pytest.fixture
def own_signals() -> Iterator[None]:
    """In-process runs install signal handlers; put the test runner's back."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


@pytest.mark.slow
@pytest.mark.usefixtures("gc_cache", "own_signals")
def test_completed_truncated_and_from(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(tiny_plan(steps=(6, 6), every_steps=3))
    run = tmp_path / "run"
    assert main(["train", str(plan), "--run-dir", str(run)]) == 0
    final = (run / "final" / "model.safetensors").read_bytes()
    capsys.readouterr()

    assert main(["resume", str(run)]) == 2
    err = capsys.readouterr().err
    assert "completed" in err and "--force" in err and err.count("\n") == 1
    assert (run / "final" / "model.safetensors").read_bytes() == final, "nothing was retrained"

    state = run / "checkpoints" / "step-12" / "state.pt"
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])
    assert main(["resume", str(run), "--force"]) == 0
    out, err = capsys.readouterr()
    assert "step-12 is unusable (truncated" in err and "from step-9" in out
    events = read_all(run / "events.jsonl")
    restart = max(i for i, e in enumerate(events) if isinstance(e, RunStarted))
    assert [s.step for s in of_type(events[restart:], Step)] == [10, 11, 12]

    assert main(["resume", str(run), "--force", "--from", "step-3"]) == 0
    out, _ = capsys.readouterr()
    assert "from step-3" in out
    events = read_all(run / "events.jsonl")
    restart = max(i for i, e in enumerate(events) if isinstance(e, RunStarted))
    assert [s.step for s in of_type(events[restart:], Step)] == list(range(4, 13))
    (back,) = of_type(events[restart:], RolledBack)
    assert (back.step, back.from_step) == (3, None) and back.checkpoint.endswith("step-3")
    cockpit = RunState()
    cockpit.apply_all(events)
    assert cockpit.train_loss.xs == list(range(1, 13)), "the cockpit cuts the logged timeline"
    aside = run / "checkpoints" / "rolled-back"
    assert {"step-9"} <= {p.name for p in aside.iterdir()}, "the later timeline is set aside"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))

    assert main(["resume", str(run), "--force", "--from", "step-99"]) == 2
    assert "step-99: no such checkpoint" in capsys.readouterr().err


class _Report:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warn(self, message: str, step: int | None = None) -> None:
        self.warnings.append(message)


@pytest.mark.parametrize("explicit", [False, True])
def test_resume_adopts_the_runs_thread_count(
    monkeypatch: pytest.MonkeyPatch, explicit: bool
) -> None:
    """Another intra-op thread count rounds differently (bench/determinism.py)."""
    from types import SimpleNamespace

    import torch

    from growcockpit.backend.state.restore import adopt_threads

    before = torch.get_num_threads()
    other = before + 1
    monkeypatch.setattr("os.cpu_count", lambda: other)  # a machine with cores for it
    if explicit:
        monkeypatch.setenv("OMP_NUM_THREADS", str(before))
    else:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    report = _Report()
    trainer = SimpleNamespace(device=torch.device("cpu"), report=report)
    try:
        adopt_threads(trainer, other)  # type: ignore[arg-type]
        assert torch.get_num_threads() == (before if explicit else other)
        assert len(report.warnings) == 1
        assert ("not bit for bit" if explicit else "stays bit for bit") in report.warnings[0]
    finally:
        torch.set_num_threads(before)


def test_resume_never_adopts_more_threads_than_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """A count from a bigger machine (or a lying checkpoint) never oversubscribes this one."""
    from types import SimpleNamespace

    import torch

    from growcockpit.backend.state.restore import adopt_threads

    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: before)
    report = _Report()
    trainer = SimpleNamespace(device=torch.device("cpu"), report=report)
    try:
        adopt_threads(trainer, before + 64)  # type: ignore[arg-type]
        assert torch.get_num_threads() == before
        assert len(report.warnings) == 1 and "cores" in report.warnings[0]
    finally:
        torch.set_num_threads(before)
