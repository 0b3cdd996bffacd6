"""Wall time per phase of a training step (fwd / bwd / opt), without costing a sync.

Out of backend/loop/step.py, which runs the step: the timer is measured around the
phases rather than woven through them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import torch

from growcockpit.metrics.cuda import timing_event


class StepTimer:
    """Wall time per phase of one step, summed over micro-batches.

    On CUDA each phase is a pair of events recorded in the stream: timing the
    GPU's work, not the host's launch time, and costing no sync. They are read
    with `read()` after something has synchronised (the step's loss read).
    """

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.enabled = True
        self._spans: list[tuple[str, Any, Any]] = []

    def start(self, enabled: bool) -> None:
        self.enabled = enabled
        self._spans.clear()

    def _mark(self) -> Any:
        if self.cuda:
            event = timing_event()
            event.record()
            return event
        return time.perf_counter()

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if not self.enabled:
            yield
            return
        start = self._mark()
        yield
        self._spans.append((name, start, self._mark()))

    def read(self) -> dict[str, float]:
        """Milliseconds per phase name."""
        out: dict[str, float] = {}
        if self.cuda and self._spans:
            self._spans[-1][2].synchronize()
        for name, start, end in self._spans:
            ms = float(start.elapsed_time(end)) if self.cuda else (end - start) * 1e3
            out[name] = out.get(name, 0.0) + ms
        return out
