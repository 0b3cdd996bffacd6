"""`bench/gpu/gpu_check.py --tiny` run as a user runs it, on the CPU, for the tests that read
its printed tables and JSON (tests/bench/gpu/)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from repo_paths import REPO

SCRIPT = REPO / "bench" / "gpu" / "gpu_check.py"


def run_tiny_gpu_check(
    gc_cache: Path, tmp_path: Path, args: list[str], timeout: int
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The finished process (stdout, stderr, return code) and the path of its `--json`:
    `--tiny --device cpu` with no GPU visible, offline, the test's cache, then `args`."""
    out_json = tmp_path / "gpu_check.json"
    env = {
        **os.environ,
        "GROWCOCKPIT_CACHE": str(gc_cache),
        "HF_HUB_OFFLINE": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHONUNBUFFERED": "1",
    }
    cmd = [sys.executable, str(SCRIPT), "--tiny", "--device", "cpu", *args]
    cmd += ["--json", str(out_json)]
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout
    )
    return proc, out_json
