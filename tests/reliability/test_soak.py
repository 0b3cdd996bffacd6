"""The soak benchmark, short (about 20 s of soak; `bench/soak.py --minutes N` for real)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO
from run_fixtures import env

BENCH = REPO / "bench" / "soak.py"


@pytest.mark.slow
def test_short_soak_keeps_seq_contiguous_for_every_viewer(tmp_path: Path, gc_cache: Path) -> None:
    res = subprocess.run(
        [sys.executable, str(BENCH), "--minutes", "0.33", "--json", "--runs", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env(gc_cache),
    )
    assert res.returncode == 0, res.stdout + res.stderr
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert report["seq_contiguous"] and report["viewer_gaps"] == 0
    assert report["commands_unanswered"] == 0 and report["commands_acked"] >= 15
    assert report["attaches"] >= 5, "the third viewer detaches and re-attaches every 3 s"
    assert len(set(report["viewer_steps"])) == 1 and report["viewer_steps"][0] == report["steps"]
    assert report["final_state"] == "stopped"
    for key in ("backend_slope_mb_per_min", "cockpit_slope_mb_per_min"):
        assert math.isfinite(report[key]), key
