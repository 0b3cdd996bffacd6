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


# ---- the whole loan, rehearsed on the CPU as the device runs it ---------------------------
# The device image lacks these (its training path must never import them): a sitecustomize
# on the path makes them unimportable, as they are there.
DEVICE_MISSING = ("textual", "optuna", "orjson", "datasets", "plotext")
SITECUSTOMIZE = f"""
import importlib.abc, sys
MISSING = {DEVICE_MISSING!r}
class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in MISSING:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not on the GPU machine)")
        return None
sys.meta_path.insert(0, _Refuse())
"""


def device_like_site(tmp_path: Path) -> Path:
    """A folder holding the sitecustomize that refuses the device's missing packages."""
    site = tmp_path / "device-site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return site


def import_seconds(env: dict[str, str]) -> float:
    """How long a fresh process takes to import the training path on this machine now: the
    unit a rehearsal sizes its budget in (a loaded box takes several times a quiet one's)."""
    import time

    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "import growcockpit.backend.loop.engine"],
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return time.perf_counter() - started
