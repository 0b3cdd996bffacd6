"""Small records the dashboard reads: per-stage timings, GPUs, event-log lines."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from growcockpit.protocol.events import Step

HIST = 120  # samples of short history (sparklines: system, per-layer grad norm)


@dataclass
class StageTiming:
    """Mean timings of one stage's steps (what shows the speedup when layers freeze);
    its tokens/s is its tokens over its time, so it agrees with the mean step time."""

    index: int
    name: str = ""
    layers: int = 0
    trainable: int = 0
    n: int = 0
    step_ms: float = 0.0
    tokens_per_s: float = 0.0
    fwd_ms: float = 0.0
    bwd_ms: float = 0.0
    opt_ms: float = 0.0
    data_ms: float = 0.0

    def _rate_with(self, rates: list[float | None], step_ms: list[float | None]) -> float:
        """The stage's tokens/s once these steps are added: its tokens over its time, each
        step's rate weighted by its time. A plain mean of the rates disagreed with the mean
        step time beside it (one slow step moves the mean ms, hardly the mean rate), so the
        row's ms and tok/s implied another batch size."""
        time = self.n * self.step_ms  # the steps so far (a step without a time counts 0)
        tokens = self.tokens_per_s * time
        for rate, ms in zip(rates, step_ms, strict=True):
            if rate and ms:
                tokens += rate * ms
                time += ms
        return tokens / time if time > 0 else self.tokens_per_s

    def add(self, ev: Step) -> None:
        self.tokens_per_s = self._rate_with([ev.tokens_per_s], [ev.step_ms])
        self.n += 1
        k = 1.0 / self.n
        self.step_ms += ((ev.step_ms or 0.0) - self.step_ms) * k
        self.fwd_ms += ((ev.fwd_ms or 0.0) - self.fwd_ms) * k
        self.bwd_ms += ((ev.bwd_ms or 0.0) - self.bwd_ms) * k
        self.opt_ms += ((ev.opt_ms or 0.0) - self.opt_ms) * k
        self.data_ms += ((ev.data_ms or 0.0) - self.data_ms) * k

    def add_many(
        self,
        step_ms: list[float | None],
        tokens_per_s: list[float | None],
        fwd_ms: list[float | None],
        bwd_ms: list[float | None],
        opt_ms: list[float | None],
        data_ms: list[float | None],
    ) -> None:
        """`add` for many steps at once (the same means, up to float rounding)."""
        k = len(step_ms)
        if not k:
            return
        self.tokens_per_s = self._rate_with(tokens_per_s, step_ms)
        n = self.n + k

        def mean(old: float, values: list[float | None]) -> float:
            return old + (sum(filter(None, values)) - k * old) / n  # None counts as 0

        self.step_ms = mean(self.step_ms, step_ms)
        self.fwd_ms = mean(self.fwd_ms, fwd_ms)
        self.bwd_ms = mean(self.bwd_ms, bwd_ms)
        self.opt_ms = mean(self.opt_ms, opt_ms)
        self.data_ms = mean(self.data_ms, data_ms)
        self.n = n


@dataclass
class GpuView:
    index: int
    name: str = ""
    util: float | None = None
    mem_used: int | None = None
    mem_total: int | None = None
    power_w: float | None = None
    temp_c: float | None = None
    run_mem: int | None = None  # this run's memory on the GPU
    run_pids: list[int] | None = None  # this run's processes on it (every local rank)
    util_hist: deque[float] = field(default_factory=lambda: deque(maxlen=HIST))
    mem_hist: deque[float] = field(default_factory=lambda: deque(maxlen=HIST))

    @property
    def mem_frac(self) -> float | None:
        if self.mem_used is None or not self.mem_total:
            return None
        return self.mem_used / self.mem_total


@dataclass
class LogEntry:
    n: int  # monotonic index, so a view can append only what is new
    t: float  # seconds since the run started (from event timestamps)
    step: int | None
    kind: str
    text: str
    severity: str = "info"  # info | good | warning | error
    detail: str = ""  # e.g. the tail of a traceback
