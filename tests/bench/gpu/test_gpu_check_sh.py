"""bench/gpu/gpu_check.sh: its wheel check and installer, the no-CUDA guard, the time caps, and
every part of `--tiny` end to end."""

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
    assert "== 1/4" not in proc.stdout


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
        "GPU_CHECK_STEP": "0",  # part 0 (bench/gpu/gpu_step.sh) has its own test: test_gpu_step_sh
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


def test_without_cuda_it_exits_3_after_its_version_line_in_one_line(tmp_path: Path) -> None:
    proc = _run(tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-2].startswith("gpu_check.sh: python ") and "cuda False" in lines[-2]
    assert NO_CUDA in lines[-1] and "--allow-cpu" in lines[-1]
    assert "== 1/4" not in proc.stdout


def test_allow_cpu_passes_the_guard_and_no_part_runs_without_a_time_limit(
    tmp_path: Path,
) -> None:
    """GPU_CHECK_LIMIT_S=1: every part has (at least) 1 s, never `timeout 0` (no limit)."""
    proc = _run(tmp_path, "--allow-cpu", GPU_CHECK_LIMIT_S="1", GPU_CHECK_STEP="1")
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert NO_CUDA not in out
    assert out.count("skipped:") == 5 and "Traceback" not in out + proc.stderr
    assert "step table skipped (time)" in out  # part 0 too: never BERT-Base on a CPU unbounded
    assert out.strip().splitlines()[-1].startswith("gpu_check.sh: ")
    assert "stage table skipped (time)" in out and "engine skipped (time)" in out


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


@pytest.mark.slow
def test_every_part_of_the_tiny_check_runs_end_to_end(tmp_path: Path) -> None:
    """`gpu_check.sh --tiny`: all four parts succeed on the CPU, with no traceback anywhere,
    so a refactor cannot silently break the GPU check before it meets a GPU; part 1 times
    both families (BERT and Llama), part 2 says busy n/a on the CPU."""
    cache = tmp_path / "cache"
    proc = _run(tmp_path, "--tiny", timeout=600, GROWCOCKPIT_CACHE=str(cache))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Traceback" not in out and "FAILED" not in out, out
    assert "skipped" not in out.split("== 1/4", 1)[1], out
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("gpu_check.sh: ") and last.count("|") == 4, last  # time | 4 parts
    table, engine, ttl, ddp = last.split(" | ", 1)[1].split("|")
    assert table.startswith("stage4_speedup=") and "roofline_ratio=" in table
    bert, llama = table.split(" llama: ")  # both families, BERT first
    assert llama.startswith("stage3_speedup=") and "schedule_speedup=" in llama
    assert "roofline_ratio=" in bert and "roofline_ratio=" in llama
    for row in ("llama-base/1 full-10 ", "llama/3 middle-30 "):  # speed, roofline, split
        assert sum(line.startswith(row) for line in proc.stdout.splitlines()) == 3, row
    assert engine.startswith("engine batch=8 stages=5 ") and "host_overhead_pct=[" in engine
    assert "busy_pct=n/a" in engine  # the profiler's device time: CUDA only
    assert "syncs_per_step=n/a" in engine and "nan" not in last  # CUDA's sync debug mode
    assert ttl.startswith("time_to_loss: ") and ddp.startswith("ddp2 tokens_per_s=")
    assert "ranks_in_sync=True" in ddp


# ---- part 1's compiled pass: what the script passes on, with a GPU stood in for ----------
def _recording_python(tmp_path: Path, gpus: int) -> tuple[Path, Path]:
    """An interpreter that is the real one, except that it reports `gpus` CUDA devices to the
    script's device count and records the arguments of the three bench scripts instead of
    running them (each prints the line its summary is read from): the script's plumbing,
    checked in seconds."""
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "python"
    wrapper.write_text(
        "#!/usr/bin/env bash\n"
        'if [ "$1" = -c ] && [[ "$2" == *device_count* ]]; then echo '
        + str(gpus)
        + "; exit 0; fi\n"
        'case "$1" in bench/gpu/gpu_check.py|bench/gpu/gpu_engine.py|bench/time_to_loss.py)\n'
        f'  echo "$*" >> {log}\n'
        '  name=$(basename "$1" .py); echo "$name: batch=0 recorded"; exit 0 ;;\n'
        "esac\n"
        f'exec {sys.executable} "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper, log


def _calls(
    tmp_path: Path, *args: str, gpus: int = 1, env: dict[str, str] | None = None
) -> dict[str, list[str]]:
    """The arguments each bench script got, by script."""
    wrapper, log = _recording_python(tmp_path, gpus)
    proc = subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path, **(env or {}), PYTHON=str(wrapper)),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    calls = [line.split() for line in log.read_text().splitlines()]
    return {call[0]: call[1:] for call in calls}


def _budget(args: list[str]) -> int:
    return int(args[args.index("--budget-s") + 1])


@pytest.mark.parametrize(
    ("compile_env", "part1_flag", "budget", "engine_compiles"),
    [(None, None, 210, False), ("1", "--compile", 210, True), ("0", "--no-compile", 120, False)],
)
def test_part_1_compiles_by_its_own_rule_on_a_gpu_unless_told(
    tmp_path: Path,
    compile_env: str | None,
    part1_flag: str | None,
    budget: int,
    engine_compiles: bool,
) -> None:
    """On CUDA part 1 gets the compile budget on top (120 + 90 s) unless GPU_CHECK_COMPILE=0,
    which passes --no-compile; GPU_CHECK_COMPILE=1 passes --compile and compiles part 2."""
    env = {"GPU_CHECK_COMPILE_BACKEND": "aot_eager"}
    if compile_env is not None:
        env["GPU_CHECK_COMPILE"] = compile_env
    calls = _calls(tmp_path, env=env)
    part1, engine = calls["bench/gpu/gpu_check.py"], calls["bench/gpu/gpu_engine.py"]
    assert _budget(part1) == budget
    assert part1[part1.index("--compile-backend") + 1] == "aot_eager"
    flags = {"--compile", "--no-compile"} & set(part1)
    assert flags == ({part1_flag} if part1_flag else set()), part1
    assert ("--compile" in engine) is engine_compiles
    if engine_compiles:  # the same backend as part 1's pass
        assert engine[engine.index("--compile-backend") + 1] == "aot_eager"


def test_without_a_gpu_part_1_gets_no_compile_budget_and_own_flags_win(tmp_path: Path) -> None:
    """--tiny on the CPU: no compile budget (gpu_check.py's rule keeps the pass off there);
    a --compile of the script's own arguments reaches part 1 and adds the budget."""
    part1 = _calls(tmp_path, "--tiny", gpus=0)["bench/gpu/gpu_check.py"]
    assert _budget(part1) == 120 and "--compile" not in part1
    part1 = _calls(tmp_path, "--tiny", "--compile", gpus=0)["bench/gpu/gpu_check.py"]
    assert _budget(part1) == 210 and part1[-1] == "--compile"


def test_the_llama_plan_runs_in_the_engine_when_asked(tmp_path: Path) -> None:
    """GPU_CHECK_ENGINE_LLAMA=1: part 2 runs the SmolLM-shaped Llama plan after the BERT one,
    at batch 8 and 32 (as many tokens as BERT's 32 and 128), with the same compile flags, and
    the summary has its line; without it, BERT alone."""
    wrapper, log = _recording_python(tmp_path, gpus=1)
    env = _env(tmp_path, PYTHON=str(wrapper), GPU_CHECK_ENGINE_LLAMA="1", GPU_CHECK_COMPILE="1")
    proc = subprocess.run(
        ["bash", str(SCRIPT)], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    engines = [ln.split() for ln in log.read_text().splitlines() if "gpu_engine.py" in ln]
    assert len(engines) == 2
    bert, llama = engines
    assert "--plan" not in bert and bert[bert.index("--batch-sizes") + 1] == "32,128"
    assert llama[llama.index("--plan") + 1] == "sample_plans/llama-smollm-135m.toml"
    assert llama[llama.index("--batch-sizes") + 1] == "8,32"
    assert "--compile" in bert and "--compile" in llama
    last = proc.stdout.strip().splitlines()[-1]
    assert "|engine batch=0 recorded|engine llama batch=0 recorded|" in last, last
    plain = tmp_path / "plain"
    plain.mkdir()
    _calls(plain)
    calls = (plain / "calls.log").read_text().splitlines()
    assert [ln for ln in calls if "gpu_engine.py" in ln and "--plan" not in ln] == [
        ln for ln in calls if "gpu_engine.py" in ln
    ]
    assert sum("gpu_engine.py" in ln for ln in calls) == 1
