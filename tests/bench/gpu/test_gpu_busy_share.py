"""The GPU's busy share, as the GPU check measures it: device events counted once (not again
through the CPU op that launched them), and the engine's probe windows placed before each
stage's first step event, where the profiler cannot touch the reported figures."""

from __future__ import annotations

import sys
import types
import warnings
from typing import Any, cast

import pytest
import torch
from repo_paths import REPO
from torch.autograd import DeviceType  # type: ignore[attr-defined]

sys.path[:0] = [str(REPO / "bench" / "gpu"), str(REPO / "bench")]

from gpu_roofline import BUSY_N, BUSY_WARM, BusyProbe, device_busy_us  # noqa: E402

from growcockpit.backend.loop.step import StepRunner  # noqa: E402


def _event(start: float, end: float, device: Any = DeviceType.CUDA, note: bool = False) -> Any:
    return types.SimpleNamespace(
        device_type=device,
        is_user_annotation=note,
        time_range=types.SimpleNamespace(start=start, end=end),
        self_device_time_total=end - start,
    )


def test_device_time_is_the_union_of_device_events_only() -> None:
    events = [
        _event(0, 30_000, DeviceType.CPU),  # the op that launched the kernels: not again
        _event(0, 30_000, note=True),  # a GPU-side annotation spanning them: not again
        _event(0, 8_000),
        _event(4_000, 12_000),  # overlaps the first (another stream): counted once
        _event(20_000, 20_000),  # a zero-length record
        _event(25_000, 26_000),
    ]
    assert device_busy_us(events) == 13_000.0
    assert device_busy_us([]) == 0.0


def test_device_time_reads_real_profiler_events() -> None:
    """On the CPU a profile holds no device event: 0, read from torch's own event objects."""
    from torch.profiler import ProfilerActivity, profile

    a = torch.randn(64, 64)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        (a @ a).sum()
    events = list(prof.events())
    assert events and all(hasattr(e, "time_range") for e in events)
    assert device_busy_us(events) == 0.0


class _Trainer:
    """The parts of `Trainer` the probe reads; `steps.reports` is the engine's own rule."""

    def __init__(self, stage_steps: list[int], log_every: int) -> None:
        self.stage_steps = stage_steps
        self.plan = types.SimpleNamespace(metrics=types.SimpleNamespace(log_every_steps=log_every))
        self.pos = types.SimpleNamespace(stage_index=0, step_in_stage=0, step=0)
        self.steps = StepRunner("fp32", torch.device("cpu"))

    @property
    def stage(self) -> Any:
        return types.SimpleNamespace(steps=self.stage_steps[self.pos.stage_index])


class _Profiler:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def start(self) -> None:
        self.log.append("start")

    def stop(self) -> None:
        self.log.append("stop")

    def events(self) -> list[Any]:
        return [_event(0, 30_000, DeviceType.CPU), _event(0, 8_000), _event(4_000, 12_000)]


def test_the_engine_probe_profiles_only_steps_before_the_first_step_event() -> None:
    """Three 15-step stages, a step event every 10 global steps: stages 1 and 3 report first
    at their 10th step, after the window (steps 3-8); stage 2 reports at its 5th, inside it,
    so it gets no figure rather than a profiled reported step."""
    t = _Trainer([15, 15, 15], log_every=10)
    now = [0.0]
    log: list[str] = []
    caught: list[warnings.WarningMessage] = []

    def sync() -> None:
        log.append(f"sync@{t.pos.stage_index}:{t.pos.step_in_stage}")
        caught.append(warnings.WarningMessage("synchronizing", UserWarning, "x", 0))

    probe = BusyProbe(
        torch.device("cpu"),
        caught,
        sync=sync,
        profiler=lambda: _Profiler(log),
        clock=lambda: now[0],
    )
    assert probe.enabled and (BUSY_WARM, BUSY_N) == (2, 3)
    rows: list[dict[str, Any]] = []
    profiled_reports: list[int] = []
    for stage, steps in enumerate(t.stage_steps):
        t.pos.stage_index, t.pos.step_in_stage = stage, 0
        rows.append({})
        for _ in range(steps):
            probe.before(t)
            if t.steps.reports(cast(Any, t)) and probe.prof is not None:
                profiled_reports.append(t.pos.step + 1)
            now[0] += 0.010  # each step takes 10 ms of wall time
            t.pos.step += 1
            t.pos.step_in_stage += 1
            probe.after(t, rows[-1])
    probe.close()
    assert profiled_reports == []
    # 12 ms of device time (overlap once, the CPU op not at all) over 3 steps of 10 ms
    assert [rows[0]["busy"], rows[2]["busy"]] == pytest.approx([0.4, 0.4])
    assert "busy" not in rows[1]
    assert log == [
        *("sync@0:2", "sync@0:5", "start", "sync@0:8", "stop"),
        "sync@1:2",  # stage 2's window opened, then dropped at its reported 5th step
        *("sync@2:2", "sync@2:5", "start", "sync@2:8", "stop"),
    ]
    assert caught == []  # the probe's own sync warnings are never counted as the engine's


def test_on_the_cpu_the_engine_probe_does_nothing() -> None:
    probe = BusyProbe(torch.device("cpu"), [])
    assert not probe.enabled
    t = _Trainer([15], log_every=5)
    row: dict[str, Any] = {}
    for _ in range(15):
        probe.before(t)
        t.pos.step += 1
        t.pos.step_in_stage += 1
        probe.after(t, row)
    assert row == {} and probe.prof is None
