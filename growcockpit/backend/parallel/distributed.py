"""torch.distributed for the stage engine: DDP rebuilt per stage, decisions taken in lockstep.

Launched by torchrun (`growcockpit train --nproc-per-node N`), every rank runs
the same Trainer. Rank 0 owns the event log and the control socket; at every
step boundary the ranks agree on (a) how many commands rank 0 received and
(b) whether any rank was asked to stop (SIGTERM), then rank 0 broadcasts the
commands so every rank applies them at the same step. With one process all of
this collapses to plain local calls.

DDP is rebuilt whenever the trainable set changes (reusing a wrapper
with `find_unused_parameters` silently desynchronises ranks; `static_graph`
fails): set `requires_grad` first, then wrap anew, then build the optimizer.

Per step the ranks exchange one small host-side message (`agree`: command
count and stop flag, a gloo all-reduce of two numbers) and, on steps that
report, one more (`step_summary`). Under NCCL both go through a side gloo
group on the CPU, so neither waits for the GPU: the only device work per step
is DDP's gradient all-reduce.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from growcockpit.grow.model_parts import part


@dataclass
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str = ""
    host_group: Any = None  # gloo group for host-side messages (None: the default group)
    wait_group: Any = None  # gloo group with a long timeout, for waiting on rank 0's data

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
        host = dist.new_group(backend="gloo") if backend == "nccl" else None
        wait = dist.new_group(backend="gloo", timeout=timedelta(seconds=data_wait_s()))
        return cls(rank, world, local, backend, host_group=host, wait_group=wait)

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

    def agree(self, pending: int, stop: bool, device: torch.device) -> tuple[int, bool]:
        """All ranks learn rank 0's command count and whether anyone must stop: one message."""
        if not self.enabled:
            return pending, stop
        t = torch.tensor([float(pending if self.is_main else 0), 1.0 if stop else 0.0])
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.host_group)
        count, any_stop = t.tolist()
        return int(count), any_stop > 0

    def broadcast(self, objects: list[Any], count: int) -> list[Any]:
        """Rank 0's list of `count` objects, on every rank."""
        if not self.enabled:
            return objects
        box: list[Any] = list(objects) if self.is_main else [None] * count
        dist.broadcast_object_list(box, src=0, group=self.host_group)
        return box

    def agree_commands(
        self, local: list[Any], stop: bool, device: torch.device
    ) -> tuple[list[Any], bool]:
        """Rank 0's queued command requests and whether any rank must stop, on every rank."""
        count, any_stop = self.agree(len(local), stop, device)
        return (self.broadcast(local, count) if count else []), any_stop

    def step_summary(
        self, loss: float, step_ms: float, device: torch.device | None = None
    ) -> tuple[float, list[float] | None]:
        """Mean loss over ranks, and each rank's step time (to spot stragglers)."""
        if not self.enabled:
            return loss, None
        local = torch.tensor([loss, step_ms], dtype=torch.float64)
        out = [torch.zeros_like(local) for _ in range(self.world_size)]
        dist.all_gather(out, local, group=self.host_group)
        rows = torch.stack(out).tolist()
        return sum(r[0] for r in rows) / len(rows), [r[1] for r in rows]

    def all_gather_objects(self, obj: Any) -> list[Any]:
        """Every rank's `obj`, on every rank (a list of one without DDP)."""
        if not self.enabled:
            return [obj]
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj, group=self.host_group)
        return out

    def wait_for_main(self, what: str) -> None:
        """Ranks > 0 wait (with a timeout sized for it) while rank 0 does `what`; says so in the log."""
        if not self.enabled:
            return
        limit = data_wait_s()
        if self.is_main:
            print(f"rank 0: {what}: done; releasing the other rank(s)", flush=True)
        else:
            print(
                f"rank {self.rank}: waiting for rank 0: {what} "
                f"(up to {limit:.0f} s; set GROWCOCKPIT_DATA_WAIT_S for more)",
                file=sys.stderr,
                flush=True,
            )
        dist.barrier(group=self.wait_group)

    def gather_digests(self, model: nn.Module) -> list[str] | None:
        """Each rank's weight digest: equal digests prove the ranks stayed in sync."""
        if not self.enabled:
            return None
        h = hashlib.sha1()
        for name, tensor in sorted(model.state_dict().items()):
            h.update(name.encode())
            h.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
        return [str(d) for d in self.all_gather_objects(h.hexdigest())]

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier(group=self.host_group)

    def close(self) -> None:
        if self.enabled and dist.is_initialized():
            dist.destroy_process_group()


def data_wait_s() -> float:
    """How long ranks > 0 may wait for rank 0 to prepare the data (default 2 h)."""
    try:
        return max(60.0, float(os.environ.get("GROWCOCKPIT_DATA_WAIT_S", "7200")))
    except ValueError:
        return 7200.0


def no_sync(module: torch.nn.Module, last: bool) -> contextlib.AbstractContextManager[object]:
    """Skip DDP's gradient all-reduce on all but the last micro-batch."""
    if last or not hasattr(module, "no_sync"):
        return contextlib.nullcontext()
    ctx: contextlib.AbstractContextManager[object] = part(module, "no_sync")()
    return ctx
