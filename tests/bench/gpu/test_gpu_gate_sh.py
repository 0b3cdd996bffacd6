"""The gate loan (`GPU_CHECK_CORPUS=… bash bench/gpu_check.sh`, bench/gpu/gpu_gate.sh)
rehearsed on the CPU with --tiny: the corpus prepared once, the gate's fixed depths, late and
MSLT trained side by side, the table and the summary line written where `run` brings them back."""

from __future__ import annotations

import json
import lzma
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

from growcockpit.plan.data_source import builtin_files

SCRIPT = REPO / "bench" / "gpu_check.sh"


def _env(tmp_path: Path, corpus: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHON": sys.executable,
        "TMPDIR": str(tmp_path),
        "OUT": str(tmp_path / "out"),
        "CUDA_VISIBLE_DEVICES": "",
        "GPU_CHECK_CORPUS": str(corpus),
        **extra,
    }


def test_a_missing_corpus_is_one_line_and_nothing_runs(tmp_path: Path) -> None:
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--tiny"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path, tmp_path / "none.txt.xz"),
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"gpu_gate.sh: GPU_CHECK_CORPUS={tmp_path / 'none.txt.xz'}: no such file; carry it "
        "(run's carry) or build it with bench/ttl/corpus.py build"
    ]
    assert "== 1" not in proc.stdout


@pytest.mark.slow
def test_the_gate_loan_runs_end_to_end_on_cpu(tmp_path: Path, gc_cache: Path) -> None:
    corpus = tmp_path / "small.txt.xz"
    text = "".join(Path(f).read_text() for f in builtin_files()[:6])[:1_500_000]
    corpus.write_bytes(lzma.compress(text.encode()))
    env = _env(
        tmp_path,
        corpus,
        GROWCOCKPIT_CACHE=str(gc_cache),
        GPU_GATE_RUN_S="120",
        GPU_GATE_LIMIT_S="155",  # under RUN_S + 40 from the start: phase 3 is always skipped
    )
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--tiny"],
        capture_output=True,
        text=True,
        timeout=400,
        env=env,
        cwd=tmp_path,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "== 3 one more seed: skipped" in output
    assert re.search(
        r"^gpu_gate\.sh: \d+ s \| gpt2\.depth_gate=(pays|does_not_pay) gpt2\.best_fixed_depth=\d$",
        output,
        re.M,
    ), output
    results = tmp_path / "out" / "gpu_gate"
    assert "M training tokens" in (results / "prepare.txt").read_text()
    table = (results / "gate_gpt2.md").read_text()
    assert [int(r.split("|")[1]) for r in table.splitlines() if re.match(r"^\| \d ", r)] == [
        4,
        2,
        1,
    ]
    assert "Verdict: " in table
    family = json.loads((results / "gpt2.json").read_text())["families"]["gpt2"]
    assert Path(family["size"]["source"]).name.startswith("small-")  # the corpus, unpacked
    runs = family["runs"][0]
    assert set(runs) >= {"baseline", "depth-2", "depth-1", "late", "mslt-longshallow-emb"}
    assert all("final_val_loss" in r for r in runs.values())
