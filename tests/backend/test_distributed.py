"""Two gloo ranks on loopback train through a grow step and stay bitwise identical."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from repo_paths import TESTS

from growcockpit.backend.state.checkpoint import load_checkpoint
from growcockpit.protocol import read_all
from growcockpit.protocol.events import RunFinished, RunStarted, StageStarted, Step

pytestmark = pytest.mark.slow

TINY = TESTS / "plans" / "tiny.toml"


def test_two_gloo_ranks_grow_in_lockstep(tmp_path: Path, gc_cache: Path) -> None:
    run_dir = tmp_path / "ddp"
    env = dict(os.environ, GROWCOCKPIT_CACHE=str(gc_cache), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "growcockpit",
            "train",
            str(TINY),
            "--run-dir",
            str(run_dir),
            "--nproc-per-node",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    events = read_all(run_dir / "events.jsonl")
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    started = [e for e in events if isinstance(e, RunStarted)]
    assert len(started) == 1 and started[0].world_size == 2, "only rank 0 writes events"
    stages = [e for e in events if isinstance(e, StageStarted)]
    assert [(s.layers, s.trainable_layers) for s in stages] == [(2, [0, 1]), (4, [2, 3])]
    steps = [e for e in events if isinstance(e, Step)]
    assert [s.step for s in steps] == list(range(1, 41))
    assert all(s.rank_step_ms is not None and len(s.rank_step_ms) == 2 for s in steps)
    assert steps[-1].tokens == 40 * 2 * 8 * 64  # steps × ranks × batch × seq
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert len(finished) == 1 and finished[0].status == "completed"
    digests = finished[0].rank_weight_digests
    assert digests is not None and len(digests) == 2
    assert digests[0] == digests[1], "ranks diverged"
    assert (run_dir / "final" / "model.safetensors").exists()
    # each rank saved its own random state, and they differ (rank-seeded dropout)
    ranks = load_checkpoint(run_dir / "checkpoints" / "step-40")["rng"]["ranks"]
    assert len(ranks) == 2 and not torch.equal(ranks[0]["torch"], ranks[1]["torch"])
    assert "rank 1: waiting for rank 0: preparing the data" in res.stderr
