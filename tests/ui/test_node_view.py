"""Every GPU of the node and every DDP rank: sampler, `growcockpit status`, system panel.

Driven by the recorded events of a real 2-rank gloo run (tests/data/ddp2-run) and
a synthetic 8-GPU `system` event appended to it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from repo_paths import TESTS
from ui_fixtures import screen_text, settle

from growcockpit.cli import main as cli_main
from growcockpit.protocol import read_all
from growcockpit.protocol.eventlog import EventLog
from growcockpit.protocol.events import GpuStat, Step, System
from growcockpit.protocol.node import rank_spread
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.widgets import SystemPanel

RECORDED = TESTS / "data" / "ddp2-run"
GIB = 2**30


def eight_gpus(t: float) -> System:
    """An 8×H200 node: GPU 5 lags (a straggler's GPU), GPUs 6-7 run someone else's job."""
    gpus = [
        GpuStat(
            index=i,
            name="NVIDIA H200",
            util=40.0 if i == 5 else 97.0,
            mem_used=(60 + i) * GIB,
            mem_total=141 * GIB,
            power_w=600.0 + i,
            temp_c=60.0 + i,
            proc_mem=None if i >= 6 else (50 + i) * GIB,
            run_pids=None if i >= 6 else [1000 + i],
        )
        for i in range(8)
    ]
    return System(
        t=t, gpus=gpus, cpu_pct=90.0, rss_bytes=3 * GIB, ram_used=40 * GIB, ram_total=128 * GIB
    )


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """The recorded 2-rank run, with one synthetic 8-GPU system sample appended."""
    run = tmp_path / "ddp2-run"
    shutil.copytree(RECORDED, run)
    last = read_all(run / "events.jsonl")[-1]
    log = EventLog(run / "events.jsonl")
    log.append(eight_gpus(last.t + 0.1))
    log.close()
    return run


def last_ranks(run: Path) -> list[float]:
    steps = [e for e in read_all(run / "events.jsonl") if isinstance(e, Step)]
    assert steps[-1].rank_step_ms is not None
    return steps[-1].rank_step_ms


def test_rank_spread_marks_the_slowest() -> None:
    spread = rank_spread([100.0, 150.0, 120.0])
    assert spread is not None
    assert (spread.slowest, spread.fastest, spread.spread_pct) == (1, 0, 50.0)
    assert spread.straggler
    assert rank_spread([100.0]) is None and rank_spread(None) is None
    assert not rank_spread([100.0, 104.0]).straggler  # type: ignore[union-attr]


def test_status_shows_every_gpu_and_each_rank(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["status", str(run_dir)]) == 0
    out = capsys.readouterr().out.splitlines()
    gpu_lines = [line.strip() for line in out if line.strip().startswith("GPU")]
    assert [line.split()[0] for line in gpu_lines] == [f"GPU{i}" for i in range(8)]
    assert "util 40%" in gpu_lines[5] and "mem 65.0G/141.0G" in gpu_lines[5]
    assert "605 W" in gpu_lines[5] and "65°C" in gpu_lines[5]
    assert "this run: 1 proc 55.0G (pid 1005)" in gpu_lines[5]
    assert "this run" not in gpu_lines[7]
    ms = last_ranks(run_dir)
    spread = rank_spread(ms)
    assert spread is not None
    (ranks,) = [line.strip() for line in out if line.strip().startswith("ranks")]
    assert ranks == (
        f"ranks  r0 {ms[0]:.0f} ms{' ◀ slowest' if spread.slowest == 0 else ''}  "
        f"r1 {ms[1]:.0f} ms{' ◀ slowest' if spread.slowest == 1 else ''}  "
        f"spread {spread.spread_pct:.0f}%"
    )
    assert cli_main(["status", str(run_dir), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [g["index"] for g in data["gpus"]] == list(range(8))
    assert data["gpus"][2]["run_pids"] == [1002]
    assert data["ranks"]["step_ms"] == ms
    assert data["ranks"]["slowest"] == spread.slowest
    assert data["state"] == "completed"


async def test_system_panel_shows_every_gpu_and_the_slowest_rank(run_dir: Path) -> None:
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await pilot.pause()
        panel = app.screen.query_one("#system-panel", SystemPanel)
        text = str(panel.render())
        for i in range(8):
            assert f"GPU{i} NVIDIA H200" in text
        assert text.count("run 1 proc") == 6
        ms = last_ranks(run_dir)
        spread = rank_spread(ms)
        assert spread is not None
        assert f"r{spread.slowest} {ms[spread.slowest]:.0f} ms ◀" in text
        assert f"spread {spread.spread_pct:.0f}%" in text
        assert "GPU7" in screen_text(app)
        overview = str(app.screen.query_one("#ov-system", SystemPanel).render())
        assert all(f"GPU{i}" in overview for i in range(8)) and "spread" in overview


class _FakeNvml(types.ModuleType):
    """NVML of an 8-GPU node where this process runs on GPU 0 and a stranger on GPU 1."""

    def __init__(self, mine: int) -> None:
        super().__init__("pynvml")
        self.mine = mine

    def nvmlInit(self) -> None: ...

    def nvmlDeviceGetCount(self) -> int:
        return 8

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> str:
        return "Fake H200"

    def nvmlDeviceGetUtilizationRates(self, h: int) -> types.SimpleNamespace:
        return types.SimpleNamespace(gpu=10 * h)

    def nvmlDeviceGetMemoryInfo(self, h: int) -> types.SimpleNamespace:
        return types.SimpleNamespace(used=h * GIB, total=141 * GIB)

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return 100_000 + h

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return 40 + h

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[types.SimpleNamespace]:
        pid = {0: self.mine, 1: 1}.get(h)
        return [] if pid is None else [types.SimpleNamespace(pid=pid, usedGpuMemory=7 * GIB)]


def test_sampler_reports_every_gpu_and_only_this_runs_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    from growcockpit.metrics.system import GpuProbe

    monkeypatch.setitem(sys.modules, "pynvml", _FakeNvml(os.getpid()))
    stats = GpuProbe().sample()
    assert [g.index for g in stats] == list(range(8))
    assert [g.util for g in stats] == [10.0 * i for i in range(8)]
    assert stats[0].run_pids == [os.getpid()] and stats[0].proc_mem == 7 * GIB
    assert stats[1].run_pids is None, "another job's process is not this run's"


def test_run_pids_include_the_other_local_ranks() -> None:
    """Under torchrun (LOCAL_WORLD_SIZE > 1) the launcher's other workers are this run's."""
    code = (
        "import os, subprocess, sys\n"
        "other = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "probe = subprocess.run([sys.executable, '-c', "
        "'from growcockpit.metrics.system import run_pids; print(sorted(run_pids()))'], "
        "env=dict(os.environ, LOCAL_WORLD_SIZE='2'), capture_output=True, text=True)\n"
        "other.kill()\n"
        "print(other.pid); print(probe.stdout.strip() or probe.stderr)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.splitlines()
    other, pids = int(out[0]), json.loads(out[1])
    assert other in pids and len(pids) >= 2
