"""Operators per step: what a CPU can see of the kernel launches a GPU would pay for.

Eager: every operator that reaches a kernel is counted by a `TorchDispatchMode`
(below autograd, after composite operators decompose: `F.linear` counts as its
`t` and `addmm`), forward, backward and optimizer alike, with their names, so
two steps can be told apart operator by operator. Compiled: a dispatch mode
would change what dynamo traces, so the profiler counts instead, labelled as
such: on CUDA the kernel launches themselves; on a CPU the top-level `aten::`
operators (the ones inductor did not fuse into its own kernels, which the CPU
profiler does not list).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

LAUNCH_NAMES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cudaGraphLaunch")


class OpCounter(TorchDispatchMode):
    """Counts each dispatched operator by name."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        self.ops[str(func.overloadpacket.__name__)] += 1
        return func(*args, **(kwargs or {}))


def dispatched_ops(step: Callable[[], None], steps: int) -> tuple[float, Counter[str]]:
    """(operators per step, the counts by name over `steps` steps) of eager steps."""
    counter = OpCounter()
    with counter:
        for _ in range(steps):
            step()
    return sum(counter.ops.values()) / steps, counter.ops


def profiled_ops(step: Callable[[], None], steps: int, cuda: bool) -> float:
    """Per step: kernel launches on CUDA, top-level `aten::` operators on a CPU (profiler)."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(steps):
            step()
        if cuda:
            torch.cuda.synchronize()
    n = 0
    for e in prof.events():
        if cuda:
            n += e.name in LAUNCH_NAMES
            continue
        if not e.name.startswith("aten::"):
            continue
        parent = e.cpu_parent
        while parent is not None and not parent.name.startswith("aten::"):
            parent = parent.cpu_parent
        n += parent is None
    return n / steps


def top_differences(a: Counter[str], b: Counter[str], per: tuple[int, int], n: int = 8) -> str:
    """The operators `a` dispatches more often than `b`, per step: where the extra work is."""
    diff = {k: a[k] / per[0] - b.get(k, 0) / per[1] for k in a}
    worst = sorted(diff.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{k} +{v:.0f}" for k, v in worst if v >= 0.5) or "none"
