"""bench/fsdp_memory.py and bench/fsdp_comm.py --quick: 2 gloo ranks, every stage of a tiny
growth plan under DDP and FSDP, measured against the plan layer's estimate and model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from repo_paths import REPO

pytestmark = pytest.mark.slow  # 2 gloo ranks in subprocesses


def _bench(name: str, out: Path) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, "-W", "ignore::FutureWarning", str(REPO / "bench" / name), "--quick"]
        + ["--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def test_memory_estimate_matches_each_ranks_shards(tmp_path: Path) -> None:
    rows = _bench("fsdp_memory.py", tmp_path / "m.json")["rows"]
    assert {(r["strategy"], r["rank"]) for r in rows} == {
        (s, k) for s in ("ddp", "fsdp") for k in (0, 1)
    }
    for r in rows:
        for key in ("params", "grads", "optimizer"):
            assert r[f"{key}_ratio"] is not None and abs(r[f"{key}_ratio"] - 1) < 0.01, r
    by = {(r["strategy"], r["stage"], r["rank"]): r for r in rows}
    # the activation formula against what autograd saves (DDP, fp32): a stated 20 % band
    for stage in range(3):
        assert 0.8 < by["ddp", stage, 0]["activations_ratio"] < 1.25, by["ddp", stage, 0]
    # the frozen bottom runs under no_grad: the grown stage keeps less than the full one
    assert by["ddp", 1, 0]["activations"] < 0.7 * by["ddp", 2, 0]["activations"]
    # FSDP halves every rank's state on 2 ranks; the frozen-bottom stage holds fewer grads
    assert by["fsdp", 2, 0]["params"] * 2 == by["ddp", 2, 0]["params"]
    assert by["fsdp", 1, 0]["grads"] < by["fsdp", 2, 0]["grads"]


def test_comm_model_matches_the_bytes_each_rank_sends(tmp_path: Path) -> None:
    rows = _bench("fsdp_comm.py", tmp_path / "c.json")["rows"]
    assert len(rows) == 2 * 3 * 2
    for r in rows:
        assert r["sent"] > 0 and abs(r["sent_ratio"] - 1) < 0.01, r
        assert abs(r["grads_ratio"] - 1) < 0.01, r
    ddp = {r["stage"]: r for r in rows if r["strategy"] == "ddp" and r["rank"] == 0}
    fsdp = {r["stage"]: r for r in rows if r["strategy"] == "fsdp" and r["rank"] == 0}
    # the frozen bottom sends no gradients: stage 2 (top half trains) sends half of stage 3's
    assert ddp[1]["grads_sent"] < ddp[2]["grads_sent"]
    assert fsdp[1]["reduce_scatter"] < fsdp[2]["reduce_scatter"]
    assert fsdp[1]["all_gather"] > 0 and ddp[1]["all_gather"] == 0
