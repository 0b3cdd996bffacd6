"""bench/gpu_check.sh checks its wheels first and names the missing ones in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from repo_paths import REPO


def test_a_missing_wheel_is_named_in_one_line_before_anything_runs(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "tomlkit.py").write_text("raise ImportError('not carried')\n")
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "PYTHONPATH": str(shadow),
        "WHEELS": str(tmp_path / "no-wheels"),
    }
    proc = subprocess.run(
        ["bash", str(REPO / "bench" / "gpu_check.sh"), "--tiny"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing wheels: tomlkit (tomlkit: ImportError" in lines[0]
    assert "== 1/4" not in proc.stdout
