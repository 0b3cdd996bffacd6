"""FSDP2 on 2 gloo ranks: a tiny MSLT plan (2 → 4 layers by stack, the old ones frozen)
trains like DDP. Stated tolerance: losses within 1e-5 and final weights within 1e-6
(only the reduction order differs: FSDP reduce-scatters, DDP all-reduces)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import TESTS
from safetensors.torch import load_file

from growcockpit.protocol import read_all
from growcockpit.protocol.events import RunFinished, StageStarted, Step, WarningEvent

pytestmark = pytest.mark.slow

FSDP_PLAN = TESTS / "plans" / "tiny-fsdp.toml"


def train(plan: Path, run_dir: Path, cache: Path) -> list[object]:
    env = dict(os.environ, GROWCOCKPIT_CACHE=str(cache), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "growcockpit", "train", str(plan), "--run-dir", str(run_dir)]
    res = subprocess.run(
        [*cmd, "--nproc-per-node", "2"], capture_output=True, text=True, timeout=300, env=env
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    return list(read_all(run_dir / "events.jsonl"))


def test_fsdp_grows_and_trains_like_ddp(tmp_path: Path, gc_cache: Path) -> None:
    ddp_plan = tmp_path / "tiny-ddp.toml"
    ddp_plan.write_text(FSDP_PLAN.read_text().replace('strategy = "fsdp"', 'strategy = "ddp"'))
    fsdp = train(FSDP_PLAN, tmp_path / "fsdp", gc_cache)
    ddp = train(ddp_plan, tmp_path / "ddp", gc_cache)

    stages = [e for e in fsdp if isinstance(e, StageStarted)]
    assert [(s.layers, s.trainable_layers) for s in stages] == [(2, [0, 1]), (4, [2, 3])]
    loss_f = [e.loss for e in fsdp if isinstance(e, Step)]
    loss_d = [e.loss for e in ddp if isinstance(e, Step)]
    assert len(loss_f) == len(loss_d) == 40
    assert max(abs(a - b) for a, b in zip(loss_f, loss_d, strict=True)) < 1e-5
    # the frozen blocks held under FSDP (layer health fingerprints each rank's shard)
    assert not [e for e in fsdp if isinstance(e, WarningEvent) and "frozen" in e.message]
    finished = [e for e in fsdp if isinstance(e, RunFinished)]
    assert finished[0].status == "completed"

    # final/ is one save_pretrained directory gathered from the shards, equal to DDP's
    wf = load_file(tmp_path / "fsdp" / "final" / "model.safetensors")
    wd = load_file(tmp_path / "ddp" / "final" / "model.safetensors")
    assert set(wf) == set(wd)
    assert max((wf[k] - wd[k]).abs().max().item() for k in wf) < 1e-6
