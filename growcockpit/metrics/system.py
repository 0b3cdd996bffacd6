"""Host and GPU utilisation, sampled on a background thread.

GPUs come from NVML (`nvidia-ml-py`); without a GPU or driver the sampler
reports CPU and RAM only and says so once, instead of failing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import psutil

from growcockpit.protocol.events import GpuStat, System, WarningEvent
from growcockpit.protocol.machine_load import load_warning, oversubscribed


class GpuProbe:
    """NVML handles for the visible GPUs, or a reason why there are none.

    `ordinal` is the torch device index this process trains on (`cuda:N`):
    the sampler runs on its own thread, whose current CUDA device is always 0,
    so the run's device must be passed in rather than read from
    `torch.cuda.current_device()` there. `reserved(ordinal)` reads what the
    caching allocator holds on that device (a parameter so tests need no GPU).
    """

    def __init__(
        self,
        ordinal: int | None = None,
        reserved: Callable[[int], int] | None = None,
    ) -> None:
        self.ordinal = ordinal
        self._reserved = reserved or _torch_reserved
        self.handles: list[object] = []
        self.names: list[str] = []
        self.unavailable: str | None = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            for i in range(pynvml.nvmlDeviceGetCount()):
                h = pynvml.nvmlDeviceGetHandleByIndex(i)
                self.handles.append(h)
                name = pynvml.nvmlDeviceGetName(h)
                self.names.append(name.decode() if isinstance(name, bytes) else str(name))
            if not self.handles:
                self.unavailable = "NVML found no GPU"
        except Exception as exc:  # NVMLError_LibraryNotFound and friends
            self.unavailable = f"no GPU metrics: NVML unavailable ({type(exc).__name__})"

    def sample(self) -> list[GpuStat]:
        out: list[GpuStat] = []
        nv = getattr(self, "_nvml", None)
        pids = run_pids() if self.handles else set()
        for i, h in enumerate(self.handles):
            stat = GpuStat(index=i, name=self.names[i])
            try:
                stat.util = float(nv.nvmlDeviceGetUtilizationRates(h).gpu)  # type: ignore[union-attr]
                mem = nv.nvmlDeviceGetMemoryInfo(h)  # type: ignore[union-attr]
                stat.mem_used, stat.mem_total = int(mem.used), int(mem.total)
                stat.power_w = nv.nvmlDeviceGetPowerUsage(h) / 1000.0  # type: ignore[union-attr]
                stat.temp_c = float(nv.nvmlDeviceGetTemperature(h, 0))  # type: ignore[union-attr]
            except Exception:
                pass
            stat.proc_mem, stat.run_pids = self._run_memory(i, h, pids)
            out.append(stat)
        return out

    def _run_memory(
        self, index: int, handle: object, pids: set[int]
    ) -> tuple[int | None, list[int] | None]:
        """This run's memory on GPU `index` and its processes there.

        NVML reports host PIDs; inside a container (its own PID namespace) none
        of ours match, so fall back to what the CUDA caching allocator holds
        for this process on its own device (NVML's GPU matched to torch's by PCI
        address), which is the same number seen from inside.
        """
        nv = getattr(self, "_nvml", None)
        try:
            procs = nv.nvmlDeviceGetComputeRunningProcesses(handle)  # type: ignore[union-attr]
            ours = [p for p in procs if p.pid in pids]
            if ours:
                used = sum(int(p.usedGpuMemory or 0) for p in ours)
                return used, sorted(int(p.pid) for p in ours)
        except Exception:
            pass
        try:
            ordinal = self._torch_ordinals().get(index)
            if ordinal is not None and ordinal == self.ordinal:
                return self._reserved(ordinal), None
        except Exception:
            pass
        return None, None

    def nvml_index(self, ordinal: int) -> int | None:
        """NVML's index of torch's `cuda:<ordinal>` (by PCI address), None if unknown."""
        for nvml, torch_ordinal in self._torch_ordinals().items():
            if torch_ordinal == ordinal:
                return nvml
        return None

    def _torch_ordinals(self) -> dict[int, int]:
        """NVML index → torch ordinal, matched by PCI address (computed once CUDA is up).

        NVML numbers every GPU in PCI order; torch numbers only the visible ones
        (`CUDA_VISIBLE_DEVICES`), fastest first unless `CUDA_DEVICE_ORDER=PCI_BUS_ID`:
        the same index can name two different GPUs.
        """
        cached: dict[int, int] | None = getattr(self, "_ordinals", None)
        if cached is not None:
            return cached
        import torch

        from growcockpit.metrics.cuda import cuda_initialized

        if not cuda_initialized():
            return {}
        nv = getattr(self, "_nvml", None)
        buses: list[str | None] = []
        for h in self.handles:
            try:
                bus = nv.nvmlDeviceGetPciInfo(h).busId  # type: ignore[union-attr]
                buses.append(bus.decode() if isinstance(bus, bytes) else str(bus))
            except Exception:
                buses.append(None)
        visible = []
        for k in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(k)
            pci = (getattr(p, "pci_domain_id", -1), getattr(p, "pci_bus_id", -1))
            visible.append((*pci, getattr(p, "pci_device_id", -1)))
        self._ordinals = match_pci(buses, visible)
        return self._ordinals


def match_pci(
    nvml_bus_ids: list[str | None], torch_pci: list[tuple[int, int, int]]
) -> dict[int, int]:
    """Pair NVML's bus ids ("00000000:3B:00.0") with torch's (domain, bus, device) triples."""
    out: dict[int, int] = {}
    for i, bus_id in enumerate(nvml_bus_ids):
        if not bus_id:
            continue
        try:
            domain, bus, rest = bus_id.split(":")
            key = (int(domain, 16), int(bus, 16), int(rest.split(".")[0], 16))
        except ValueError:
            continue
        if key in torch_pci:
            out[i] = torch_pci.index(key)
    return out


def _torch_reserved(ordinal: int) -> int:
    import torch

    return int(torch.cuda.memory_reserved(ordinal))


def run_pids() -> set[int]:
    """The processes of this run: this one, and under torchrun every worker of the launcher.

    torchrun starts one worker per rank as children of its agent, so rank 0's
    siblings are the other ranks of this node.
    """
    pids = {os.getpid()}
    if int(os.environ.get("LOCAL_WORLD_SIZE", "1")) > 1:
        try:
            agent = psutil.Process(os.getppid())
            pids.update(p.pid for p in agent.children(recursive=True))
        except psutil.Error:
            pass
    return pids


class SystemSampler:
    """Emits a `System` event every `interval_s` seconds until stopped."""

    def __init__(
        self,
        emit: Callable[[System | WarningEvent], object],
        interval_s: float,
        device_index: int | None = None,
    ) -> None:
        self.emit = emit
        self.interval_s = max(0.2, interval_s)
        self.gpus = GpuProbe(ordinal=device_index)  # the run's cuda:N, not the thread's
        self._proc = psutil.Process(os.getpid())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="system-sampler", daemon=True)
        self._proc.cpu_percent(None)
        psutil.cpu_percent(None, percpu=True)
        self._warned = False  # oversubscription said once per episode, not every sample

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2.0)

    def sample(self) -> System:
        vm = psutil.virtual_memory()
        cores = [float(c) for c in psutil.cpu_percent(None, percpu=True)]
        try:
            load = [float(x) for x in os.getloadavg()]
        except OSError:  # not every platform has a load average
            load = []
        return System(
            gpus=self.gpus.sample(),
            cpu_pct=float(self._proc.cpu_percent(None)),
            rss_bytes=int(self._proc.memory_info().rss),
            ram_used=int(vm.total - vm.available),
            ram_total=int(vm.total),
            machine_cpu_pct=sum(cores) / len(cores) if cores else None,
            core_pct=cores,
            load_avg=load,
            cores=psutil.cpu_count() or len(cores),
        )

    def load_notice(self, sample: System) -> WarningEvent | None:
        """A warning when the machine turns oversubscribed (once until it recovers)."""
        busy = oversubscribed(sample.load_avg[0] if sample.load_avg else None, sample.cores)
        if busy and not self._warned:
            self._warned = True
            return WarningEvent(message=load_warning(sample.load_avg[0], sample.cores))
        if not busy:
            self._warned = False
        return None

    def _run(self) -> None:
        """A first sample at once (even a short run shows its system), then every interval."""
        while True:
            try:
                sample = self.sample()
                self.emit(sample)
                notice = self.load_notice(sample)
                if notice is not None:
                    self.emit(notice)
            except Exception:
                return
            if self._stop.wait(self.interval_s):
                return
