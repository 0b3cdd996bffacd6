"""What a step could cost at best on this device, and how busy the device is while it runs.

* `measure_peak`: the device's matmul peak measured on the spot (a timed loop of
  square matmuls, bf16 on CUDA, fp32 on CPU) and its memory copy bandwidth, so
  the roofline is this machine's, not a datasheet's.
* `config_bytes`: a lower bound of the bytes a stage's step must move (weights read,
  optimizer state read and written); its FLOPs are the product's one count
  (growcockpit/plan/flops.py `stage_step_flops`: Q/K/V/O and FFN matrices as the family has
  them, frozen blocks forward only, the head's weight gradient only where it trains).
* `roofline_ms`: max(FLOPs / peak, bytes / bandwidth), the fastest the step
  could run; measured ms / bound is how far from it the step is.
* `UtilSampler`: NVML utilisation on a thread, charged to the configuration
  stepping now, the NVML GPU found by PCI address (`GpuProbe.nvml_index`);
  `util_window` steps one configuration for one contiguous ≥ 2 s window
  (NVML averages over its own sample period, so short bursts under-read).
* `busy_share`: the share of a few steps' wall time the GPU runs kernels,
  from `torch.profiler` (CUDA only): the union of the device events' intervals
  (`device_busy_us`), so a kernel is counted once, not once more through the
  CPU op that launched it. `BusyProbe` measures the same share on the real
  engine's own steps (bench/gpu/gpu_engine.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import torch
from gpu_configs import Config

from growcockpit.backend.calibrate import Clock

BUSY_N, BUSY_WARM = 3, 2  # the engine's busy share: steps per window, steps skipped first


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
    """Device busy time of `n` profiled steps / wall time of `n` unprofiled ones (None off
    CUDA, or if the profiler fails). The wall time is taken without the profiler, whose own
    host work would make the GPU look idler than it is."""
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
        busy_us = device_busy_us(prof.events())
    except Exception:
        return None
    return min(1.0, busy_us / wall_us) if wall_us > 0 else None


def device_busy_us(events: Iterable[Any]) -> float:
    """Microseconds in which at least one device event (kernel, memcpy, memset) runs.

    Only events on the device count, and overlapping ones (two streams) once: a CPU
    op's `self_device_time_total` is the time of the kernels it launched, which appear
    again as device events, so summing every profiler row counts each kernel twice.
    GPU-side user annotations span kernels and are left out for the same reason.
    """
    spans = sorted(
        (float(e.time_range.start), float(e.time_range.end))
        for e in events
        if _on_device(e) and not getattr(e, "is_user_annotation", False)
    )
    busy, start, end = 0.0, None, None
    for s, e in spans:
        if end is None or s > end:
            if end is not None and start is not None:
                busy += end - start
            start, end = s, e
        else:
            end = max(end, e)
    if end is not None and start is not None:
        busy += end - start
    return busy


def _on_device(event: Any) -> bool:
    from torch._C._autograd import DeviceType

    return getattr(event, "device_type", DeviceType.CPU) != DeviceType.CPU


class BusyProbe:
    """The share of the engine's own step time the GPU is busy, per stage (CUDA only).

    What is measured: the engine's `Trainer.train_step` inside this very run (its
    step of backend/loop/step.py, prefetched batch, LR, events), not a copy of it.
    In each stage, after `warm` steps (the first steps at a new shape warm the
    allocator and the kernels' heuristics), `n` steps run back to back between
    two synchronizations: their wall time, with no profiler attached; then `n`
    more under `torch.profiler`: the time in which a device event (kernel, copy)
    runs (gpu_roofline.py `device_busy_us`). busy = that time / the wall time.
    The profiler's own host work would make the GPU look idler than it is,
    hence the wall time of unprofiled steps.

    These 2n steps all come before the stage's first step event, in the window
    the tokens/s and host-overhead figures leave out (`stage_figures`,
    `host_overhead`), so neither the profiler nor the two synchronizations reach
    them; a stage where a reported step would fall inside (a short first log
    window, a short stage) gets no figure (n/a). Sync-debug warnings the
    probe's own synchronizations raise are dropped, not counted as the engine's.
    `sync`, `profiler` and `clock` are the device's by default (a test gives fakes).
    """

    def __init__(
        self,
        device: torch.device,
        caught: list[warnings.WarningMessage],
        n: int = BUSY_N,
        warm: int = BUSY_WARM,
        sync: Callable[[], None] | None = None,
        profiler: Callable[[], Any] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        cuda = device.type == "cuda"
        self.enabled = cuda or (sync is not None and profiler is not None)
        self.caught, self.n, self.warm, self.clock = caught, n, warm, clock
        self.sync = sync or (torch.cuda.synchronize if cuda else (lambda: None))
        self.profiler = profiler or _cuda_profiler
        self.stage = -1
        self.spoiled = False
        self.started = self.wall_s = 0.0
        self.prof: Any = None

    def before(self, trainer: Any) -> None:
        """Called before each `train_step`: open the timed window or the profiled one."""
        if not self.enabled:
            return
        stage, j = trainer.pos.stage_index, trainer.pos.step_in_stage + 1  # j: the coming step
        if stage != self.stage:
            self.close()
            self.stage, self.spoiled = stage, False
        if self.spoiled or not self.warm < j <= self.warm + 2 * self.n:
            return
        if trainer.steps.reports(trainer):  # the engine's own rule for a reported step
            self.spoiled = True
            self.close()
        elif j == self.warm + 1:
            self._quiet(self.sync)
            self.started = self.clock()
        elif j == self.warm + self.n + 1:
            self._quiet(self.sync)
            self.wall_s = self.clock() - self.started
            self.prof = self.profiler()
            self._quiet(self.prof.start)

    def after(self, trainer: Any, row: dict[str, Any]) -> None:
        """Called after each `train_step`: close the profiled window into `row["busy"]`."""
        if self.prof is None or trainer.pos.step_in_stage != self.warm + 2 * self.n:
            return
        prof, self.prof = self.prof, None
        try:
            self._quiet(self.sync)
            self._quiet(prof.stop)
            busy_us = device_busy_us(prof.events())
        except Exception as exc:  # a profiler that fails costs this figure, not the run
            print(f"gpu_engine: profiler failed ({type(exc).__name__}: {exc}); busy n/a")
            return
        if self.wall_s > 0:
            row["busy"] = min(1.0, busy_us / (self.wall_s * 1e6))

    def close(self) -> None:
        """A window left open (the stage or the run ended inside it) is dropped."""
        if self.prof is not None:
            prof, self.prof = self.prof, None
            with contextlib.suppress(Exception):
                self._quiet(prof.stop)

    def _quiet(self, fn: Callable[[], Any]) -> None:
        """Run `fn`, dropping the sync-debug warnings it raises itself."""
        mark = len(self.caught)
        try:
            fn()
        finally:
            del self.caught[mark:]


def _cuda_profiler() -> Any:
    from torch.profiler import ProfilerActivity, profile

    return profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
