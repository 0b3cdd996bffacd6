"""bench/gpu/gpu_step.sh --tiny: the GPU step check rehearsed on the CPU, one family (GPT-2), end
to end: the warm-up first, then the step-vs-reference table, everything in one folder, and a
summary line that carries vs_reference= and mfu_datasheet=."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO


@pytest.mark.slow
def test_the_tiny_rehearsal_writes_one_folder_and_the_summary(
    tmp_path: Path, gc_cache: Path
) -> None:
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "OUT": str(out),
        "CUDA_VISIBLE_DEVICES": "",
        "GPU_STEP_PLANS": "gpt2",
        "GROWCOCKPIT_CACHE": str(gc_cache),
        "OMP_NUM_THREADS": "1",
    }
    proc = subprocess.run(
        ["bash", str(REPO / "bench" / "gpu" / "gpu_step.sh"), "--tiny"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[-1].startswith("gpu_step.sh: ")
    assert "vs_reference=" in lines[-1] and "mfu_datasheet=n/a" in lines[-1]  # a CPU: no sheet
    assert proc.stdout.index("warm-up: gpt2 data") < proc.stdout.index("== 1 the step")
    folder = out / "gpu_step"
    assert {p.name for p in folder.iterdir()} >= {
        "warmup.log", "step_vs_reference.log", "step_vs_reference.json", "summary.txt",
    }  # fmt: skip
    data = json.loads((folder / "step_vs_reference.json").read_text())
    full = data["families"]["gpt2"]["rows"][0]
    assert full["compiled_product_ms"] > 0 and full["compiled_over_eager"] > 0
