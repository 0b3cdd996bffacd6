"""torch.distributed for the stage engine: DDP rebuilt per stage, decisions taken in lockstep.

Launched by torchrun (`growcockpit train --nproc-per-node N`), every rank runs
the same Trainer. Rank 0 owns the event log and the control socket; at every
step boundary the ranks agree on (a) how many commands rank 0 received and
(b) whether any rank was asked to stop (SIGTERM), then rank 0 broadcasts the
commands so every rank applies them at the same step. With one process all of
this collapses to plain local calls.

DDP is rebuilt whenever the trainable set changes (NOTES.md: reusing a wrapper
with `find_unused_parameters` silently desynchronises ranks; `static_graph`
fails): set `requires_grad` first, then wrap anew, then build the optimizer.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


@dataclass
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str = ""

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_env(cls, device_hint: str | None = None) -> DistContext:
        """Join the process group torchrun describes in the environment, if any."""
        world = int(os.environ.get("WORLD_SIZE", "1"))
        if world <= 1:
            return cls()
        rank = int(os.environ["RANK"])
        local = int(os.environ.get("LOCAL_RANK", "0"))
        use_cuda = torch.cuda.is_available() and (
            device_hint is None or device_hint.startswith("cuda")
        )
        backend = "nccl" if use_cuda else "gloo"
        if use_cuda:
            torch.cuda.set_device(local)
        if not dist.is_initialized():
            dist.init_process_group(backend=backend)
        return cls(rank=rank, world_size=world, local_rank=local, backend=backend)

    def device(self, requested: str | None) -> torch.device:
        if self.backend == "nccl":
            return torch.device("cuda", self.local_rank)
        if requested:
            return torch.device(requested)
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def wrap(self, module: nn.Module, device: torch.device) -> nn.Module:
        if not self.enabled or not any(p.requires_grad for p in module.parameters()):
            return module
        ids = [device.index] if device.type == "cuda" else None
        return DistributedDataParallel(module, device_ids=ids, broadcast_buffers=False)

    def _tensor(self, values: list[float], device: torch.device) -> torch.Tensor:
        dev = device if self.backend == "nccl" else torch.device("cpu")
        return torch.tensor(values, dtype=torch.float64, device=dev)

    def agree(self, pending: int, stop: bool, device: torch.device) -> tuple[int, bool]:
        """All ranks learn rank 0's command count and whether anyone must stop."""
        if not self.enabled:
            return pending, stop
        t = self._tensor([float(pending if self.is_main else 0), 1.0 if stop else 0.0], device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return int(t[0].item()), bool(t[1].item() > 0)

    def broadcast(self, objects: list[Any], count: int) -> list[Any]:
        """Rank 0's list of `count` objects, on every rank."""
        if not self.enabled:
            return objects
        box: list[Any] = list(objects) if self.is_main else [None] * count
        dist.broadcast_object_list(box, src=0)
        return box

    def step_summary(
        self, loss: float, step_ms: float, device: torch.device
    ) -> tuple[float, list[float] | None]:
        """Mean loss over ranks, and each rank's step time (to spot stragglers)."""
        if not self.enabled:
            return loss, None
        local = self._tensor([loss, step_ms], device)
        out = [torch.zeros_like(local) for _ in range(self.world_size)]
        dist.all_gather(out, local)
        losses = [float(t[0]) for t in out]
        return sum(losses) / len(losses), [float(t[1]) for t in out]

    def gather_digests(self, model: nn.Module) -> list[str] | None:
        """Each rank's weight digest: equal digests prove the ranks stayed in sync."""
        if not self.enabled:
            return None
        h = hashlib.sha1()
        for name, tensor in sorted(model.state_dict().items()):
            h.update(name.encode())
            h.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, h.hexdigest())
        return [str(d) for d in out]

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()

    def close(self) -> None:
        if self.enabled and dist.is_initialized():
            dist.destroy_process_group()
