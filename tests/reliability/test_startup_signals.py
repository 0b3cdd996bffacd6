"""SIGTERM while the backend is still importing torch ends as "stopped", with a line."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from run_fixtures import env, tiny_plan

from growcockpit.protocol import read_status


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_stop_signal_during_imports(tmp_path: Path, gc_cache: Path, sig: signal.Signals) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(tiny_plan())
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "growcockpit", "train", str(plan), "--run-dir", str(run)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(gc_cache),
    )
    try:
        deadline = time.time() + 60
        while not (run / "status.json").exists():
            assert time.time() < deadline and proc.poll() is None, "no status.json at start-up"
            time.sleep(0.005)
        assert not (run / "events.jsonl").exists(), "status.json comes before the heavy imports"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert read_status(run).state == "stopped"
    assert f"stopped by {sig.name} during start-up" in err, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert not (run / "checkpoints").exists(), "nothing was trained, nothing to checkpoint"
