"""Random state per DDP rank: seeded apart, saved per rank, restored whatever the GPU count.

Every rank builds the same model from `plan.seed` (DDP re-broadcasts rank 0's
weights at each stage anyway); after that each rank > 0 reseeds, so dropout
and MLM masks differ across ranks instead of repeating rank 0's. Rank 0 keeps
the plan's stream, so a single-process run is unchanged.

A checkpoint keeps each rank's CPU and current-GPU generator (`rng.ranks`);
on resume a rank takes its own entry. A resume with fewer ranks or GPUs than
at save time restores what exists and says what it could not (never an
IndexError).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from growcockpit.metrics.cuda import cuda_initialized

if TYPE_CHECKING:
    from growcockpit.backend.parallel.distributed import DistContext

RANK_SEED_STRIDE = 1_000_003


def seed_rank(seed: int, rank: int) -> None:
    """Give rank > 0 its own random stream (rank 0 keeps the plan's)."""
    if rank > 0:
        torch.manual_seed(seed + RANK_SEED_STRIDE * rank)


def capture(device: torch.device) -> dict[str, Any]:
    """This process's generators: CPU, and the current GPU's (without touching other GPUs)."""
    cuda = None
    if device.type == "cuda" and cuda_initialized():
        cuda = torch.cuda.get_rng_state(device)
    return {"torch": torch.get_rng_state(), "cuda": cuda}


def gather(dist: DistContext, device: torch.device) -> list[dict[str, Any]]:
    """Every rank's `capture()`, on every rank (a collective under DDP)."""
    return dist.all_gather_objects(capture(device))


def restore(rng: dict[str, Any], dist: DistContext, device: torch.device) -> str | None:
    """Restore this rank's generators from a checkpoint's `rng`; a note when only partly possible."""
    ranks: list[dict[str, Any]] = rng.get("ranks") or []
    if dist.rank < len(ranks):
        mine = ranks[dist.rank]
    else:  # an older checkpoint, or more ranks than at save time: start from rank 0's stream
        mine = {"torch": rng["torch"], "cuda": _legacy_cuda(rng.get("cuda"), device)}
    torch.set_rng_state(mine["torch"])
    cuda = mine.get("cuda")
    notes = []
    if cuda is not None and device.type == "cuda":
        torch.cuda.set_rng_state(cuda, device)
    elif device.type == "cuda" and (rng.get("cuda") is not None or ranks):
        notes.append("no saved GPU random state for this GPU: GPU dropout is not resumed exactly")
    if dist.rank >= len(ranks) and dist.rank > 0:
        seed_rank(len(ranks), dist.rank)
        if ranks:
            notes.append(
                f"the checkpoint has random state for {len(ranks)} rank(s), this run has "
                f"{dist.world_size}: the extra ranks start new random streams"
            )
    return "; ".join(notes) or None


def _legacy_cuda(saved: Any, device: torch.device) -> torch.Tensor | None:
    """Older checkpoints kept `get_rng_state_all()` (a list, one per visible GPU)."""
    if device.type != "cuda" or saved is None:
        return None
    if isinstance(saved, torch.Tensor):
        return saved
    index = device.index or 0
    if isinstance(saved, list | tuple) and index < len(saved):
        state: torch.Tensor = saved[index]
        return state
    return None
