"""Each rank's memory at the metrics cadence, gathered by rank 0 into one `rank_memory` event.

What growth saves in memory, seen live: the parameters, the gradients' size and the
optimizer moments each rank holds (its local shards under FSDP, so the cockpit shows
FSDP dividing them by the world size and a frozen block holding no gradient or moment),
the device's peak allocation since the last sample, and the process's resident memory.
Every rank calls `gather_rank_memory` at the same step (a host-side all-gather of a few
numbers, as the step summary is); rank 0 gets the event, the others None.
"""

from __future__ import annotations

import psutil
import torch
from torch import nn
from torch.distributed.tensor import DTensor

from growcockpit.backend.parallel.distributed import DistContext
from growcockpit.protocol.events import RankMemory, RanksMemory


def _local_bytes(t: torch.Tensor) -> int:
    local = t.to_local() if isinstance(t, DTensor) else t
    return int(local.numel() * local.element_size())


def local_memory(
    model: nn.Module, optimizer: torch.optim.Optimizer | None, device: torch.device, rank: int
) -> RankMemory:
    """This rank's figures; gradients as the trainable parameters' local size (a step
    boundary has none allocated: `zero_grad(set_to_none=True)` freed them)."""
    params = list(model.parameters())
    moments = 0
    if optimizer is not None:
        for slots in optimizer.state.values():
            moments += sum(
                _local_bytes(v) for v in slots.values() if isinstance(v, torch.Tensor) and v.ndim
            )
    peak = None
    if device.type == "cuda":
        peak = int(torch.cuda.max_memory_allocated(device))
        torch.cuda.reset_peak_memory_stats(device)
    return RankMemory(
        rank=rank,
        params=sum(_local_bytes(p) for p in params),
        grads=sum(_local_bytes(p) for p in params if p.requires_grad),
        optimizer=moments,
        device_peak=peak,
        rss=int(psutil.Process().memory_info().rss),
    )


def gather_rank_memory(
    dist: DistContext,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None,
    device: torch.device,
    where: tuple[int, int, str],
) -> RanksMemory | None:
    """Every rank's `local_memory` on rank 0 as one event (`where`: step, stage, strategy)."""
    mine = local_memory(model, optimizer, device, dist.rank)
    every = dist.all_gather_objects(mine)
    if not dist.is_main:
        return None
    step, stage, strategy = where
    return RanksMemory(
        step=step, stage=stage, strategy=strategy, world_size=dist.world_size, ranks=every
    )
