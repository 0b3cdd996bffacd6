"""A tiny real run on a CUDA device: what the CPU suite cannot show (the step loop, its
timer and its memory figures on a GPU), so a GPU machine proves the product trains there.
Marked `gpu`: skipped where CUDA is absent (tests/conftest.py), selected by `-m gpu`."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from repo_paths import TINY_TOML
from run_fixtures import growcockpit, of_type

from growcockpit.protocol import read_all, read_status
from growcockpit.protocol.events import RanksMemory, RunFinished, RunStarted, Step

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def test_a_tiny_run_trains_on_cuda_and_reports_the_device_peak(
    tmp_path: Path, gc_cache: Path
) -> None:
    run_dir = tmp_path / "tiny"
    res = growcockpit(
        "train", str(TINY_TOML), "--run-dir", str(run_dir), "--device", "cuda", cache=gc_cache
    )
    assert res.returncode == 0, res.stderr
    events = read_all(run_dir / "events.jsonl")
    started = of_type(events, RunStarted)
    assert started and started[0].device.startswith("cuda"), started
    steps = of_type(events, Step)
    assert [s.step for s in steps] == list(range(1, 41))
    assert all(math.isfinite(s.loss) for s in steps)
    finished = of_type(events, RunFinished)
    assert len(finished) == 1 and finished[0].status == "completed"
    assert read_status(run_dir).state == "completed"
    memory = of_type(events, RanksMemory)
    assert memory, "the metrics cadence reports each rank's memory"
    peaks = [r.device_peak for m in memory for r in m.ranks]
    assert all(p is not None and p > 0 for p in peaks), peaks  # a GPU only: None on the CPU
