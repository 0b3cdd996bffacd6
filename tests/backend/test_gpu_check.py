"""bench/gpu_check.py --tiny runs end to end on the CPU and prints its table and summary."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

SCRIPT = REPO / "bench" / "gpu_check.py"
MSLT_STAGES = ["shallow-3", "grow-6", "grow-9", "grow-12", "all-layers"]


@pytest.mark.slow
def test_gpu_check_tiny_runs_on_cpu(gc_cache: Path, tmp_path: Path) -> None:
    out_json = tmp_path / "gpu_check.json"
    env = {
        **os.environ,
        "GROWCOCKPIT_CACHE": str(gc_cache),
        "HF_HUB_OFFLINE": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHONUNBUFFERED": "1",
    }
    cmd = [
        sys.executable,
        str(SCRIPT),
        "--tiny",
        "--steps",
        "2",
        "--batch-size",
        "4",
        "--device",
        "cpu",
        "--budget-s",
        "50",
        "--json",
        str(out_json),
    ]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output

    lines = proc.stdout.splitlines()
    assert re.match(
        r"gpu_check: stage4_speedup=\d+\.\d\dx \(model \d+\.\d\dx\) schedule_speedup=\d+\.\d\dx .*device=CPU",
        lines[-1],
    ), output
    # one table row per stage config: the baseline, then each MSLT stage in order
    rows = [line for line in lines if re.match(r"(baseline|mslt)/\d+ \S+\s+\d+\s", line)]
    names = [row.split()[1] for row in rows]
    assert names[: 1 + len(MSLT_STAGES)] == ["full-12", *MSLT_STAGES], output
    assert "no GPU in use: running on CPU" in output
    assert "GPU util: n/a" in output

    result = json.loads(out_json.read_text())
    assert [r["name"] for r in result["rows"]] == ["full-12", *MSLT_STAGES]
    grow12 = result["rows"][4]
    assert (grow12["depth"], grow12["trainable_layers"], grow12["embeddings_trainable"]) == (
        4,
        [3],
        False,
    )
    assert grow12["frozen_prefix"] == 3  # the bottom 3 layers run forward-only
    assert all(r["timed_steps"] == 2 and r["step_ms"] > 0 for r in result["rows"])
    assert result["r_h"]["r"] > 0 and result["schedule"]["model_speedup"] > 1
