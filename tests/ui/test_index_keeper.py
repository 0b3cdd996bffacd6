"""The attach-index keeper that `growcockpit train` runs beside the backend: it keeps the
cockpit's index level with a growing log, and never takes the run down when it fails."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from ui_fixtures import assert_same_state, write_long_log

from growcockpit.protocol import EventLog, RunPaths, Step
from growcockpit.session.attach_index import INDEX_NAME, state_to_dict
from growcockpit.session.index_keeper import IndexKeeper, index_kept
from growcockpit.session.run_session import RunSession


def _cold(run_dir: Path) -> RunSession:
    session = RunSession(run_dir, read_chunk=500)
    session._index_tried = True
    while session.poll() >= session.read_chunk:
        pass
    return session


def test_keeper_follows_a_growing_log_and_writes_a_last_index_at_the_end(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    events = RunPaths(run_dir).events
    keeper = IndexKeeper(run_dir, save_s=0.0, poll_s=0.02)
    keeper.start()
    time.sleep(0.1)  # no log yet: the keeper waits, writes nothing
    assert not (run_dir / INDEX_NAME).exists()
    write_long_log(events, n_events=2_000, layers=4)
    with EventLog(events) as log:
        for i in range(200):
            log.append(Step(step=10**6 + i, loss=2.0 - i / 1000, t=2e9 + i))
            if i % 50 == 0:
                time.sleep(0.05)
    keeper.stop()
    assert keeper.failed is None and keeper.saves >= 2
    warm = RunSession(run_dir)
    assert warm.load_index() and warm.events_read == 2_200
    assert_same_state(state_to_dict(warm.state), state_to_dict(_cold(run_dir).state))


def test_a_failing_keeper_stops_itself_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    write_long_log(RunPaths(run_dir).events, n_events=300, layers=2)

    def broken(self: RunSession) -> int:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(RunSession, "poll", broken)
    with index_kept(run_dir) as keeper:
        assert keeper is not None
        keeper.poll_s = 0.01
        time.sleep(0.1)
    assert keeper.failed == "RuntimeError: disk on fire"
    assert not (run_dir / INDEX_NAME).exists()
    with index_kept(run_dir, enabled=False) as none:  # other DDP ranks keep nothing
        assert none is None


def test_the_keeper_imports_nothing_until_the_log_exists(tmp_path: Path) -> None:
    """Its thread would otherwise import the cockpit's fold while the backend imports
    torch, holding the GIL on the run's start-up path."""
    import subprocess
    import sys

    code = (
        "import sys, time\n"
        "from growcockpit.session.index_keeper import IndexKeeper\n"
        f"k = IndexKeeper({str(tmp_path)!r}, poll_s=0.01)\n"
        "k.start(); time.sleep(0.3)\n"
        "print('growcockpit.session.run_session' in sys.modules); k.stop()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
