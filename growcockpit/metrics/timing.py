"""Per-layer forward and backward time, measured with hooks on sampled steps only.

Forward time of a block is the span between its forward pre- and post-hook.
Backward runs top to bottom, so a block's backward time is the span from the
moment the gradient of its output is ready (a hook on that output tensor, set
by the forward post-hook) to the same moment of the next lower block (the
lowest trainable block ends when `loss.backward()` returns). A tensor hook, not
a module's full backward hook: that one wraps each block's inputs and outputs
in extra autograd functions and cost a GPT-2 step about a millisecond per block
on a CPU; the tensor hook marks the same moment for the price of a callback. On CUDA the hooks record
events that are read at the next step that reads anything (the loss read of a
reported step, or a layer-stats step), so timing adds no device sync of its
own, even on steps that report nothing; on CPU they read `perf_counter`.
Frozen blocks under `no_grad` have no backward: their bwd_ms stays None.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from growcockpit.metrics.cuda import timing_event


class _Clock:
    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"

    def mark(self) -> Any:
        if self.cuda:
            ev = timing_event()
            ev.record()
            return ev
        return time.perf_counter()

    def ms(self, start: Any, end: Any) -> float:
        if self.cuda:
            return float(start.elapsed_time(end))
        return float(end - start) * 1e3


class LayerTimer:
    """`with timer.measure(layers):` around forward+backward; then `timer.result()`."""

    def __init__(self, device: torch.device) -> None:
        self.clock = _Clock(device)
        self._handles: list[RemovableHandle] = []
        self._fwd_start: dict[int, Any] = {}
        self._fwd_end: dict[int, Any] = {}
        self._bwd_start: dict[int, Any] = {}
        self._backward_end: Any = None
        self._n = 0
        self._pending = False

    def attach(self, layers: nn.ModuleList) -> None:
        self.detach()
        self._n = len(layers)
        self._fwd_start.clear()
        self._fwd_end.clear()
        self._bwd_start.clear()
        self._backward_end = None
        self._pending = True
        for idx, layer in enumerate(layers):
            self._handles.append(layer.register_forward_pre_hook(self._stamp(self._fwd_start, idx)))
            self._handles.append(layer.register_forward_hook(self._forward_done(idx)))

    def backward_done(self) -> None:
        self._backward_end = self.clock.mark()

    def detach(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def _stamp(self, table: dict[int, Any], idx: int) -> Callable[..., None]:
        def hook(*_: Any) -> None:
            table[idx] = self.clock.mark()

        return hook

    def _forward_done(self, idx: int) -> Callable[..., None]:
        """Forward post-hook: the forward's end, and a hook on the output's gradient (a frozen
        block's output under `no_grad` has none: no backward, no mark)."""
        on_grad = self._stamp(self._bwd_start, idx)

        def hook(_module: nn.Module, _args: Any, output: Any) -> None:
            self._fwd_end[idx] = self.clock.mark()
            out = output[0] if isinstance(output, tuple) else output
            if isinstance(out, torch.Tensor) and out.requires_grad:
                out.register_hook(on_grad)  # type: ignore[no-untyped-call]

        return hook

    @property
    def pending(self) -> bool:
        """A timed step whose times have not been read yet (`result()` not called since)."""
        return self._pending

    def result(self) -> tuple[list[float | None], list[float | None]]:
        """(fwd_ms, bwd_ms) per layer; call after the step's loss has been read.

        The engine calls it only on steps that read something anyway (a reported
        step, a layer-stats step), so the wait here is for events already done:
        it synchronises on the last recorded event, never the whole device.
        """
        self._pending = False
        if self.clock.cuda and self._backward_end is not None:
            self._backward_end.synchronize()
        elif self.clock.cuda:
            torch.cuda.synchronize()
        fwd: list[float | None] = [None] * self._n
        bwd: list[float | None] = [None] * self._n
        for idx in range(self._n):
            if idx in self._fwd_start and idx in self._fwd_end:
                fwd[idx] = self.clock.ms(self._fwd_start[idx], self._fwd_end[idx])
        ordered = sorted(self._bwd_start)
        for pos, idx in enumerate(ordered):
            end = self._bwd_start[ordered[pos - 1]] if pos > 0 else self._backward_end
            if end is not None:
                bwd[idx] = self.clock.ms(self._bwd_start[idx], end)
        return fwd, bwd
