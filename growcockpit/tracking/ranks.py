"""A tracked DDP loop: `track()` on every rank, rank 0 writes the run, every rank obeys.

Under `torchrun` each rank runs the user's loop and calls `growcockpit.track()`. Only rank
0 opens the run directory (events, status, the control socket, the console copy); the
other ranks get `QuietFiles`, which write nothing. At each `step()` rank 0 applies the
commands that arrived and broadcasts what the loop must do (paused, stopping, the LR
scale); every rank takes it in the same collective, so a pause holds them all at the
same step instead of stalling the others inside their next all-reduce. While paused, rank
0 broadcasts every half second, so no rank waits in one collective long enough to hit
the process group's timeout. One broadcast of three numbers per step, and every
`metrics.every_steps` calls an all-gather of each rank's memory (`rank_memory`, as the
engine reports it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from growcockpit.backend.parallel.rank_memory import local_memory
from growcockpit.protocol.events import Event, RanksMemory, RunFinished
from growcockpit.protocol.pending import PendingCommand
from growcockpit.protocol.rundir import RunPaths


@dataclass(frozen=True)
class Ranks:
    """This process's place in the job, and the device the broadcast tensor lives on."""

    rank: int
    world: int
    device: torch.device

    @property
    def writer(self) -> bool:
        return self.rank == 0


def detect(model_device: torch.device) -> Ranks | None:
    """The job's ranks when torch.distributed is initialised with more than one, else None."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return None
    backend = dist.get_backend()
    device = model_device if backend == "nccl" else torch.device("cpu")
    return Ranks(dist.get_rank(), dist.get_world_size(), device)


def share(ranks: Ranks, paused: bool, stopping: bool, scale: float) -> tuple[bool, bool, float]:
    """Rank 0's (paused, stopping, LR scale), on every rank."""
    state = torch.tensor(
        [float(paused), float(stopping), scale], dtype=torch.float64, device=ranks.device
    )
    dist.broadcast(state, src=0)
    held, stop, factor = state.tolist()
    return held > 0.5, stop > 0.5, float(factor)


def gather_memory(
    ranks: Ranks,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None,
    device: torch.device,
    where: tuple[int, int],
) -> RanksMemory | None:
    """Every rank's memory (the engine's `rank_memory`: parameters, gradients, optimizer
    moments, device peak, RSS) on rank 0 as one event; None on the others. Every rank
    calls it at the same `step()` call (one small all-gather)."""
    mine = local_memory(model, optimizer, device, ranks.rank)
    every: list[object] = [None] * ranks.world
    dist.all_gather_object(every, mine)
    if not ranks.writer:
        return None
    step, stage = where
    return RanksMemory(
        step=step,
        stage=stage,
        strategy="ddp",
        world_size=ranks.world,
        ranks=[m for m in every if m is not None],  # type: ignore[misc]
    )


class _QuietControl:
    """No control socket on a rank other than 0: rank 0 answers, the broadcast tells."""

    def poll(self) -> list[PendingCommand]:
        return []

    def wait(self, timeout: float) -> list[PendingCommand]:
        return []

    def close(self) -> None:
        pass


class QuietFiles:
    """What a rank other than 0 has of the run directory: nothing written, nothing read."""

    resumed = False

    def __init__(self, run_dir: Path) -> None:
        self.paths = RunPaths(Path(run_dir))
        self.control = _QuietControl()
        self.closed = False

    def start_sampler(self) -> None:
        pass

    def emit(self, event: Event) -> Event:
        return event

    def close(self, finished: RunFinished) -> None:
        self.closed = True
