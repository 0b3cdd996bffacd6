"""The GPU check's smaller fixes, shown on the CPU: the right GPU, the right NVML index, memory
released at stage changes, no layer-timer read on silent steps, the time-to-loss step log."""

from __future__ import annotations

import re
import sys
import types
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from repo_paths import REPO

sys.path[:0] = [
    str(REPO / "bench" / "gpu"),
    str(REPO / "bench" / "ttl"),
    str(REPO / "bench"),
]  # the time-to-quality study, common.py

# imported before any test patches `cuda_initialized`: modules bind it at import time
from gpu_roofline import UtilSampler  # noqa: E402

from growcockpit.backend import device as device_mod  # noqa: E402
from growcockpit.metrics import system as system_mod  # noqa: E402
from growcockpit.metrics.timing import LayerTimer  # noqa: E402

GIB = 2**30
BUSES = ["00000000:18:00.0", "00000000:3B:00.0", "00000000:86:00.0"]


class _Nvml(types.ModuleType):
    """A 3-GPU node's NVML; none of its processes is ours (a container: another PID space)."""

    def __init__(self) -> None:
        super().__init__("pynvml")

    def nvmlInit(self) -> None: ...

    def nvmlDeviceGetCount(self) -> int:
        return 3

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> str:
        return "Fake H200"

    def nvmlDeviceGetPciInfo(self, h: int) -> types.SimpleNamespace:
        return types.SimpleNamespace(busId=BUSES[h].encode())

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[object]:
        return []


@pytest.fixture
def two_visible_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch sees NVML's GPUs 2 and 0, in that order (CUDA_VISIBLE_DEVICES=2,0)."""
    monkeypatch.setitem(sys.modules, "pynvml", _Nvml())
    monkeypatch.setattr("growcockpit.metrics.cuda.cuda_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    props = [(0, 0x86, 0), (0, 0x18, 0)]
    monkeypatch.setattr(
        torch.cuda,
        "get_device_properties",
        lambda k: types.SimpleNamespace(
            pci_domain_id=props[k][0], pci_bus_id=props[k][1], pci_device_id=props[k][2]
        ),
    )
    # a misleading variable: the mapping must come from PCI addresses, not from parsing it
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")


@pytest.mark.usefixtures("two_visible_gpus")
def test_memory_is_charged_to_the_runs_gpu_not_the_sampler_threads() -> None:
    """A run on cuda:1 (NVML GPU 0): the sampler thread's current device would say 0."""
    probe = system_mod.GpuProbe(ordinal=1, reserved=lambda ordinal: (ordinal + 1) * GIB)
    stats = probe.sample()
    assert [s.proc_mem for s in stats] == [2 * GIB, None, None]
    sampler = system_mod.SystemSampler(lambda e: None, 1.0, device_index=0)
    sampler.gpus._reserved = lambda ordinal: 5 * GIB
    assert [s.proc_mem for s in sampler.gpus.sample()] == [None, None, 5 * GIB]


@pytest.mark.usefixtures("two_visible_gpus")
def test_the_gpu_checks_nvml_index_comes_from_the_pci_address() -> None:
    assert system_mod.GpuProbe().nvml_index(0) == 2
    sampler = UtilSampler(torch.device("cuda", 1))
    assert sampler.unavailable is None and sampler.index == 0


def test_stage_change_collects_garbage_before_emptying_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(device_mod.gc, "collect", lambda: calls.append("gc") or 0)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append("empty_cache"))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda d=None: 0)
    device_mod.release_cached_memory(torch.device("cuda", 0))
    assert calls == ["gc", "empty_cache"]


@pytest.mark.usefixtures("gc_cache")
def test_layer_timing_is_read_only_on_steps_that_read_anyway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """timing every step, step events every 4: the timer's result (a device wait on CUDA)
    is read once per reported step, never on the three silent ones between."""
    from test_step import TINY, make_trainer

    text = re.sub(r"^eval_every_steps = 10$", "log_every_steps = 4", TINY, flags=re.M)
    text = text.replace("every_steps = 2\n", "every_steps = 0\ntiming_every_steps = 1\n", 1)
    trainer = make_trainer(tmp_path, text)
    reads: list[int] = []
    real = LayerTimer.result
    monkeypatch.setattr(LayerTimer, "result", lambda self: reads.append(1) or real(self))
    for _ in range(3):
        assert trainer.train_step() is None
    assert reads == []
    assert trainer.train_step() is not None
    assert reads == [1]
    fwd, bwd = trainer.steps.layer_ms  # kept by the step runner until reported
    assert len(fwd) == 2 and all(ms is not None and ms >= 0 for ms in fwd)


def test_time_to_loss_plans_log_every_10_steps_and_the_curve_counts_each_window(
    tmp_path: Path,
) -> None:
    import ttl_plans
    from common import Size, stage_step_flops
    from ttl_runs import curve

    from growcockpit.plan import plan_to_dict
    from growcockpit.protocol import EventLog
    from growcockpit.protocol.events import Eval, RunStarted, StageStarted, Step

    size = Size("bert", 2, 32, 2, 64, 8, 2000, 40, 1e-3, 20, eval_batches=2)
    budget = ttl_plans.Budget(baseline_steps=40, eval_every=20)
    plan = ttl_plans.budget_plan("baseline", size, 0, budget)
    assert plan.metrics.log_every_steps == 10
    own = replace(plan.metrics, log_every_steps=1)
    plateau = replace(
        plan, metrics=own, stages=[replace(plan.stages[0], advance="plateau", patience=5)]
    )
    assert ttl_plans.with_step_log(plateau).metrics.log_every_steps == 1  # patience counts events
    tokens = 8 * 64
    with EventLog(tmp_path / "events.jsonl") as log:
        log.append(RunStarted(plan=plan_to_dict(plan)))
        log.append(StageStarted(index=0, layers=2, trainable_layers=[0, 1], steps=40))
        for s in (10, 20, 30, 40):
            log.append(Step(step=s, stage=0, loss=5.0, tokens=tokens * s, step_ms=2.0))
        log.append(Eval(step=40, stage=0, val_loss=5.0))
    out = curve(tmp_path)  # the product's fold of the events (compare's load_progress)
    assert out["wall_s"] == pytest.approx(40 * 2.0 / 1e3)
    assert out["flops"] == pytest.approx(40 * stage_step_flops(plan)[0])
    assert out["evals"][-1]["wall_s"] == pytest.approx(0.08)
