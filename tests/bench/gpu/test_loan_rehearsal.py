"""The GPU loan rehearsed on the CPU exactly as the device runs it: `bash bench/gpu_check.sh
--tiny`, the device's missing packages unimportable, a budget sized by this machine's own
speed right now (a loaded box gets more, never a fixed cap that load breaks), and a control
killed mid-run: the gate must read undecided and every speedup of the loan's line unclaimed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gpu_check_fixtures import DEVICE_MISSING, device_like_site, import_seconds
from repo_paths import REPO

PARTS = ("probe", "engine", "gate", "hops", "stages", "step")
BUDGET_IMPORTS = 30  # the rehearsal's budget in import times (≈ 360 s at 12 s, loaded)
GRACE_S = 45  # past the budget: a cut part's TERM/KILL, the shell's own start


def _pids_with(marker: str) -> list[int]:
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        # not "pytest" not in cmd: pytest's tmp_path holds "pytest-of-…", so every control
        # was passed over and the kill never happened where the suite runs
        if marker in cmd and int(proc.name) != os.getpid():
            out.append(int(proc.name))
    return out


def _finished(events: Path) -> bool:
    for line in events.read_text().splitlines():
        try:
            if json.loads(line).get("type") == "run_finished":
                return True
        except ValueError:
            continue  # a line still being written
    return False


def _kill_first_control_mid_run(tmp_path: Path, proc: subprocess.Popen[str], limit: float) -> bool:
    """SIGKILL GPT-2's depth-1 control as soon as its process is seen (found by its run
    folder, which only this test's loan uses). True if it was killed before it finished.

    Not "after its first step": at the tiny scale on a quiet machine the control's steps
    take under a second after its imports, so a poll that waited for a step found the
    process gone (the test failed on a quiet machine). A control killed at any point
    before its end is what the gate must call undecided."""
    pattern = "gpu-loan-*/gate/runs/gpt2/gpt2/seed0/depth-1"
    while proc.poll() is None and time.time() < limit:
        for run_dir in tmp_path.glob(pattern):
            pids = _pids_with(str(run_dir))
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            if pids:
                return True
            if (run_dir / "events.jsonl").exists() and _finished(run_dir / "events.jsonl"):
                return False  # it ended before the poll saw its process
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_the_whole_loan_rehearsed_on_cpu_with_a_control_killed(
    tmp_path: Path, gc_cache: Path
) -> None:
    site = device_like_site(tmp_path)
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]),
        "TMPDIR": str(tmp_path),
        "OUT": str(out),
        "CUDA_VISIBLE_DEVICES": "",
        "GROWCOCKPIT_CACHE": str(gc_cache),
        "OMP_NUM_THREADS": "1",
        "WHEELS": str(tmp_path / "no-wheels"),
    }
    env.pop("GPU_CHECK_CORPUS", None)
    for name in DEVICE_MISSING:  # refused as on the device
        probe = subprocess.run(
            [sys.executable, "-c", f"import {name}"], env=env, capture_output=True
        )
        assert probe.returncode != 0 and b"not on the GPU machine" in probe.stderr, name
    budget = min(720, max(180, round(BUDGET_IMPORTS * import_seconds(env))))
    env["GPU_CHECK_BUDGET_S"] = str(budget)
    started = time.time()
    log = (tmp_path / "stdout.txt").open("w")
    proc = subprocess.Popen(
        ["bash", str(REPO / "bench" / "gpu_check.sh"), "--tiny"],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    killed = _kill_first_control_mid_run(tmp_path, proc, started + budget + GRACE_S)
    proc.wait(timeout=max(1.0, started + budget + GRACE_S - time.time()))
    wall = time.time() - started
    text = (tmp_path / "stdout.txt").read_text()
    assert proc.returncode == 0, text[-5000:]
    assert wall <= budget + GRACE_S, f"{wall:.0f} s for a budget of {budget} s"

    files = [p for p in out.rglob("*") if p.is_file()]
    assert 3 <= len(files) <= 8, files  # what `run` brings back
    assert {"loan.log", "loan.jsonl", "probe.log", "gate.log"} <= {p.name for p in files}

    last = text.strip().splitlines()[-1]
    assert re.match(rf"^gpu_check\.sh: \d+ s of {budget} s \| ", last), last
    items = last.split(" | ")[1:]
    for i, part in enumerate(PARTS, 1):  # every part present, finished, cut or skipped
        assert re.search(rf"^== {i}/6 {part}: ", text, re.M), part
        assert any(
            re.match(rf"^{part}( cut at \d+ s| skipped| FAILED)?[:( ]", it) for it in items
        ), part
    for m in re.finditer(r"FAILED", text):  # a crash shows its traceback beside it
        assert "Traceback" in text[m.start() : m.start() + 6000], text[
            m.start() - 200 : m.start() + 400
        ]
    assert "step_checks_ok=3/3" in last  # the probe's three families (bf16 against fp32 on CPU)

    assert killed, "GPT-2's depth-1 control was never seen running: the gate was not reached"
    gate = next(it for it in items if it.startswith("gate"))
    assert "gpt2.depth_gate=undecided(" in gate and "depth-1" in gate, gate
    assert not re.search(r"speedup[\w.-]*=(?!unclaimed\()", last), last  # every one unclaimed
    records = [json.loads(ln) for ln in (out / "loan.jsonl").read_text().splitlines()]
    verdicts = {r["family"]: r for r in records if r.get("kind") == "verdict"}
    assert verdicts["gpt2"]["verdict"] == "undecided"
    assert any(r.get("kind") == "ladder" for r in records)  # the probe's, as measured
    assert any(r.get("kind") == "sizing" for r in records)
    assert records[-1]["kind"] == "summary" and records[-1]["line"] == last
