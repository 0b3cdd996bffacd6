"""bench/gpu_check.sh (bench/gpu/gpu_check.sh runs it): its wheel check and installer, the
no-CUDA guard, the corpus check, and the one budget that no part runs past (the whole loan
rehearsed end to end: test_loan_rehearsal.py)."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from repo_paths import REPO

pytestmark = pytest.mark.slow  # each test drives gpu_check.sh in a subprocess


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
        ["bash", str(REPO / "bench" / "gpu" / "gpu_check.sh"), "--tiny"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing wheels: tomlkit (tomlkit: ImportError" in lines[0]
    assert "== 1/6" not in proc.stdout


# ---- the rest of the shell script: guard, installer, time caps, every part end to end ------
SCRIPT = REPO / "bench" / "gpu" / "gpu_check.sh"
NO_CUDA = "CUDA is not available to this torch"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHON": sys.executable,
        "TMPDIR": str(tmp_path),  # a fresh private install dir (gpu-check-site) per test
        "CUDA_VISIBLE_DEVICES": "",
        "WHEELS": str(tmp_path / "wheels"),
        **extra,
    }


def _run(tmp_path: Path, *args: str, timeout: int = 120, **extra: str) -> Any:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(tmp_path, **extra),
        cwd=tmp_path,
    )


def _wheel(folder: Path, dist: str, module: str, source: str, tag: str = "py3-none-any") -> Path:
    """A minimal but valid wheel holding one module (hashes in RECORD, as pip checks them)."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{dist}-99.0.dist-info"
    files = {
        f"{module}.py": source,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: 99.0\n",
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n",
    }

    def digest(text: str) -> str:
        raw = hashlib.sha256(text.encode()).digest()
        return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    record = "".join(
        f"{name},{digest(text)},{len(text.encode())}\n" for name, text in files.items()
    )
    files[f"{info}/RECORD"] = record + f"{info}/RECORD,,\n"
    path = folder / f"{dist}-99.0-{tag}.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def _cuda_here() -> bool:
    probe = [
        sys.executable,
        "-c",
        "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)",
    ]
    return subprocess.run(probe, capture_output=True).returncode == 0


def test_without_cuda_it_exits_3_after_its_version_line_in_one_line(tmp_path: Path) -> None:
    if _cuda_here():
        pytest.skip("CUDA is here: the script runs instead of refusing")
    proc = _run(tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-2].startswith("gpu_check.sh: python ") and "cuda False" in lines[-2]
    assert NO_CUDA in lines[-1] and "--allow-cpu" in lines[-1]
    assert "== 1/6" not in proc.stdout


def test_a_spent_budget_skips_every_part_and_still_says_so_in_one_line(tmp_path: Path) -> None:
    """GPU_CHECK_BUDGET_S=2: the wheels' preamble spends it; every part reads skipped, none
    runs without a limit, and the summary line names all six."""
    proc = _run(tmp_path, "--tiny", GPU_CHECK_BUDGET_S="2", OUT=str(tmp_path / "out"))
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "Traceback" not in out + proc.stderr and "FAILED" not in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("gpu_check.sh: ") and " of 2 s | " in last
    for part in ("probe", "engine", "gate", "hops", "stages", "step"):
        assert f"{part} skipped (" in last, part
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"loan.log", "loan.jsonl"}


def test_a_missing_corpus_is_one_line_and_nothing_runs(tmp_path: Path) -> None:
    proc = _run(tmp_path, "--tiny", GPU_CHECK_CORPUS=str(tmp_path / "none.txt.xz"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"gpu_check.sh: GPU_CHECK_CORPUS={tmp_path / 'none.txt.xz'}: no such file; carry it "
        "(run's carry) or build it with bench/ttl/corpus.py build"
    ]
    assert "== 1/6" not in proc.stdout


def test_carried_wheels_install_one_by_one_a_misfit_is_skipped(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "tomlkit.py").write_text("raise ImportError('not carried')\n")
    wheels = tmp_path / "wheels"
    _wheel(wheels, "alien", "alien", "", tag="cp27-cp27m-win32")  # fits no python here
    _wheel(wheels, "tomlkit", "tomlkit", "WORKS = True\n")
    proc = _run(tmp_path, PYTHONPATH=str(shadow))
    out = proc.stdout
    assert "skipped alien-99.0-cp27-cp27m-win32.whl" in out, out + proc.stderr
    assert "installed tomlkit-99.0-py3-none-any.whl" in out
    assert "gpu_check.sh: wheels ok" in out and proc.returncode == 3  # then: no CUDA here


def test_what_is_still_missing_after_installing_is_named(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "tomlkit.py").write_text("raise ImportError('not carried')\n")
    _wheel(tmp_path / "wheels", "alien", "alien", "", tag="cp27-cp27m-win32")
    proc = _run(tmp_path, PYTHONPATH=str(shadow))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "skipped alien-99.0-cp27-cp27m-win32.whl" in proc.stdout
    assert "missing wheels: tomlkit (tomlkit: ImportError" in proc.stderr.strip().splitlines()[-1]


def test_a_carried_nvidia_ml_py_is_used_when_all_else_is_present(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "pynvml.py").write_text("raise ImportError('no NVML bindings here')\n")
    _wheel(tmp_path / "wheels", "nvidia_ml_py", "pynvml", "CARRIED = True\n")
    proc = _run(tmp_path, PYTHONPATH=str(shadow))
    out = proc.stdout
    assert "installed nvidia_ml_py-99.0-py3-none-any.whl" in out, out + proc.stderr
    ok = next(line for line in out.splitlines() if line.startswith("gpu_check.sh: wheels ok"))
    assert "nvidia-ml-py" not in ok
