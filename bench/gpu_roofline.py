"""What a step could cost at best on this device, and how busy the device is while it runs.

* `measure_peak`: the device's matmul peak measured on the spot (a timed loop of
  square matmuls, bf16 on CUDA, fp32 on CPU) and its memory copy bandwidth, so
  the roofline is this machine's, not a datasheet's.
* `config_flops` / `config_bytes`: model FLOPs of one step of a stage
  configuration (bench/common.py `stage_step_flops`: frozen blocks forward
  only, the frozen tied head forward + input gradient) and a lower bound of
  the bytes it must move (weights read, optimizer state read and written).
* `roofline_ms`: max(FLOPs / peak, bytes / bandwidth), the fastest the step
  could run; measured ms / bound is how far from it the step is.
* `UtilSampler`: NVML utilisation on a thread, charged to the configuration
  stepping now, the NVML GPU found by PCI address (`GpuProbe.nvml_index`);
  `util_window` steps one configuration for one contiguous ≥ 2 s window
  (NVML averages over its own sample period, so short bursts under-read).
* `busy_share`: the share of a few steps' wall time the GPU runs kernels,
  from `torch.profiler` (CUDA only).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

import torch
from common import stage_step_flops
from gpu_configs import Config

from growcockpit.backend.calibrate import Clock
from growcockpit.plan.types import Plan


@dataclasses.dataclass
class Peak:
    tflops: float  # measured dense matmul throughput
    dtype: str
    size: int
    gbps: float  # measured device memory copy bandwidth (read + write)
    seconds: float  # what measuring it took


def measure_peak(device: torch.device, budget_s: float = 4.0, size: int | None = None) -> Peak:
    """Dense matmul TFLOP/s and copy GB/s, each the best of a few timed loops within `budget_s`."""
    cuda = device.type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    n = size or (8192 if cuda else 512)
    started = time.perf_counter()
    clock = Clock(device)
    best_ms = _best_matmul_ms(clock, n, device, dtype, inner=10 if cuda else 3)
    numel = (1 << 28) if cuda else (1 << 22)  # 512 MiB of bf16 / 16 MiB of fp32
    copy_ms = _best_copy_ms(clock, numel, device, dtype, started, budget_s)
    elem = torch.empty((), dtype=dtype).element_size()
    return Peak(
        tflops=2 * n**3 / (best_ms / 1e3) / 1e12,
        dtype="bf16" if cuda else "fp32",
        size=n,
        gbps=2 * numel * elem / (copy_ms / 1e3) / 1e9,  # each element read and written
        seconds=time.perf_counter() - started,
    )


def _best_matmul_ms(
    clock: Clock, n: int, device: torch.device, dtype: torch.dtype, inner: int
) -> float:
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    clock.mean_ms(lambda: a @ b, 2)  # cuBLAS heuristics, allocator
    return min(clock.mean_ms(lambda: a @ b, inner) for _ in range(3))


def _best_copy_ms(
    clock: Clock,
    numel: int,
    device: torch.device,
    dtype: torch.dtype,
    started: float,
    budget_s: float,
) -> float:
    src = torch.empty(numel, device=device, dtype=dtype)
    dst = torch.empty_like(src)
    best, reps = float("inf"), 0
    while reps < 3 or (time.perf_counter() - started < budget_s and reps < 10):
        best = min(best, clock.mean_ms(lambda: dst.copy_(src), 5))
        reps += 1
    return best


def config_flops(plan: Plan, cfg: Config) -> float:
    """Model FLOPs of one step of `cfg` (its stage priced by bench/common.py's model)."""
    return stage_step_flops(plan)[cfg.stage_index]


def config_bytes(cfg: Config, act_bytes: int) -> float:
    """A lower bound of a step's device memory traffic: every weight read once in the forward
    (`act_bytes` per element under autocast), trained weights again in the backward, and the
    AdamW update (fp32 weight, gradient, two moments read, three written: 28 bytes each)."""
    total = sum(p.numel() for p in cfg.model.parameters())
    trained = sum(p.numel() for p in cfg.params if p.requires_grad)
    return float(total * act_bytes + trained * act_bytes + trained * 28)


def roofline_ms(flops: float, nbytes: float, peak: Peak) -> dict[str, float]:
    compute = flops / (peak.tflops * 1e12) * 1e3
    memory = nbytes / (peak.gbps * 1e9) * 1e3
    return {"compute_ms": compute, "memory_ms": memory, "bound_ms": max(compute, memory)}


class UtilSampler:
    """pynvml GPU utilisation/power sampled on a thread, attributed to the config stepping now."""

    def __init__(self, device: torch.device, interval_s: float = 0.05) -> None:
        from growcockpit.metrics.system import GpuProbe

        self.cuda = device.type == "cuda"
        self.probe = GpuProbe(ordinal=device.index if self.cuda else None)
        self.unavailable = self.probe.unavailable
        self.index: int | None = None
        if self.cuda and not self.unavailable:
            # NVML numbers GPUs by PCI order, torch the visible ones: match by PCI address
            self.index = self.probe.nvml_index(device.index or 0)
            if self.index is None:
                self.unavailable = f"no NVML GPU at the PCI address of {device}"
        self.interval_s = interval_s
        self.current: Config | None = None
        self.all_util: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        if not self.unavailable and self.cuda:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            cfg = self.current
            if cfg is None or self.index is None:
                continue
            try:
                stat = self.probe.sample()[self.index]
            except Exception:
                continue
            if stat.util is not None:
                cfg.util.append(stat.util)
                self.all_util.append(stat.util)
            if stat.power_w is not None:
                cfg.power.append(stat.power_w)


def util_window(
    cfg: Config, step: Callable[[], None], sampler: UtilSampler, seconds: float = 2.0
) -> None:
    """Step `cfg` back to back for one contiguous window of ≥ `seconds`, NVML sampling it.

    The samples the interleaved timing rounds gave this config are replaced:
    those chunks are shorter than NVML's sample period and read low.
    """
    if not sampler.cuda or sampler.unavailable:
        return
    cfg.util.clear()
    cfg.power.clear()
    torch.cuda.synchronize()
    started = time.perf_counter()
    sampler.current = cfg
    while time.perf_counter() - started < seconds:
        for _ in range(4):
            step()
        torch.cuda.synchronize()
    sampler.current = None
    cfg.util_window_s = time.perf_counter() - started


def busy_share(step: Callable[[], None], device: torch.device, n: int = 3) -> float | None:
    """Kernel time of `n` profiled steps / wall time of `n` unprofiled ones (None off CUDA,
    or if the profiler fails). The wall time is taken without the profiler, whose own host
    work would make the GPU look idler than it is."""
    if device.type != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile

    try:
        torch.cuda.synchronize()
        started = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        wall_us = (time.perf_counter() - started) * 1e6
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                step()
            torch.cuda.synchronize()
        kernel_us = sum(_self_device_us(e) for e in prof.key_averages())
    except Exception:
        return None
    return min(1.0, kernel_us / wall_us) if wall_us > 0 else None


def _self_device_us(event: Any) -> float:
    """Self device time of one profiler row; torch renamed the field (cuda → device)."""
    for name in ("self_device_time_total", "self_cuda_time_total"):
        value = getattr(event, name, None)
        if value is not None:
            return float(value)
    return 0.0
