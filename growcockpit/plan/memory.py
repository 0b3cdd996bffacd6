"""Estimated memory of each stage on one rank, under DDP or FSDP at N ranks.

Growth's memory claim made checkable: a frozen block holds no gradient, no optimizer
state and (below the lowest trainable block, embeddings frozen) no activations, so the
early stages of a grown model need less than the final model trained whole. Per rank:

- parameters: stored fp32 (the backend autocasts; it never keeps low-precision
  weights, so there is no separate master copy): 4 bytes each, ÷ N under FSDP.
- gradients: the trainable parameters only, fp32 (FSDP reduces in fp32), ÷ N under FSDP.
- optimizer: AdamW and LAMB keep two fp32 moments per trainable parameter, ÷ N under FSDP.
- activations: the micro-batch's (`optim.batch_size` × `data.seq_len` tokens, never
  divided by N: each rank runs its own micro-batch) saved tensors at the compute dtype,
  by the per-family count of plan/footprint.py.
- working: what a step needs on top for a moment. DDP: its gradient buckets, one fp32
  copy of the trainable gradients. FSDP: the root's parameters (embeddings, head) whole
  at the compute dtype for the whole step, two blocks whole (the one running and the one
  prefetched), and one trainable block's whole fp32 gradient before its reduce-scatter.

`cpu_offload` (FSDP) keeps parameters, gradients and optimizer state in host memory:
they leave the device total. The compute dtype is 2 bytes for bf16/fp16 and for "auto"
(bf16 on any GPU this estimate is asked about), 4 for fp32. Allocator fragmentation and
the CUDA context (≈ 0.5-1 GB) are not counted: leave that headroom.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from growcockpit.plan.footprint import StageFootprint, stage_footprints
from growcockpit.plan.types import Plan

Strategy = Literal["ddp", "fsdp"]
GB = 1e9
DEFAULT_GPU_GB = 80.0
DEFAULT_RANKS = 8  # one 8-GPU node: what `plan show` prices when --ranks is not given
STATE_BYTES = 4  # fp32 parameters, gradients and optimizer moments
OPTIMIZER_MOMENTS = 2  # AdamW and LAMB: exp_avg and exp_avg_sq
_COMPUTE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "auto": 2}


def compute_bytes(precision: str) -> int:
    """Bytes of one element at the run's compute dtype on a GPU ("auto" is bf16 there)."""
    return _COMPUTE_BYTES.get(precision, 4)


@dataclass(frozen=True)
class StageMemory:
    """One stage's estimated bytes on one rank (module doc)."""

    index: int
    name: str
    strategy: Strategy
    ranks: int
    params: float
    grads: float
    optimizer: float
    activations: float
    working: float
    offloaded: float = 0.0  # FSDP cpu_offload: state kept in host memory instead

    @property
    def state(self) -> float:
        return self.params + self.grads + self.optimizer

    @property
    def total(self) -> float:
        """On the device: everything but what `cpu_offload` keeps on the host."""
        return self.state + self.activations + self.working


def activation_bytes(fp: StageFootprint, precision: str) -> float:
    """The micro-batch's saved activations (plan/footprint.py) at the compute dtype."""
    a = compute_bytes(precision)
    per_block = fp.block_activation_elements * a + fp.dropout_mask_bytes
    blocks = fp.autograd_blocks * per_block * fp.tokens
    upcast = STATE_BYTES if a < STATE_BYTES else 0  # the loss's fp32 copy of the logits
    head = fp.vocab * fp.head_positions * fp.tokens * (a + upcast + STATE_BYTES)
    return blocks + head


def stage_memory(
    fp: StageFootprint, strategy: Strategy, ranks: int, precision: str, offload: bool = False
) -> StageMemory:
    """One stage on one of `ranks` ranks (module doc)."""
    n = max(1, ranks) if strategy == "fsdp" else 1
    params = fp.params * STATE_BYTES / n
    grads = fp.trainable * STATE_BYTES / n
    optimizer = fp.trainable * STATE_BYTES * OPTIMIZER_MOMENTS / n
    a = compute_bytes(precision)
    if strategy == "fsdp":
        gradient = fp.parts.block * STATE_BYTES if fp.trainable_blocks else 0
        working = float((fp.root + 2 * fp.parts.block) * a + gradient)
    else:
        working = float(fp.trainable * STATE_BYTES)
    offloaded = params + grads + optimizer if strategy == "fsdp" and offload else 0.0
    if offloaded:
        params = grads = optimizer = 0.0
    return StageMemory(
        index=fp.index,
        name=fp.name,
        strategy=strategy,
        ranks=max(1, ranks),
        params=params,
        grads=grads,
        optimizer=optimizer,
        activations=activation_bytes(fp, precision),
        working=working,
        offloaded=offloaded,
    )


def plan_memory(
    plan: Plan, ranks: int, strategy: Strategy | None = None, precision: str | None = None
) -> list[StageMemory]:
    """Every stage's per-rank estimate; the plan's own strategy and precision by default."""
    how: Strategy = strategy or plan.distributed.strategy
    offload = plan.distributed.cpu_offload and how == "fsdp"
    dtype = precision or plan.optim.precision
    return [stage_memory(fp, how, ranks, dtype, offload) for fp in stage_footprints(plan)]


@dataclass(frozen=True)
class MemoryFit:
    """The largest stage against one GPU's memory."""

    largest: StageMemory
    gpu_bytes: float

    @property
    def fits(self) -> bool:
        return self.largest.total <= self.gpu_bytes


def memory_fit(stages: list[StageMemory], gpu_gb: float) -> MemoryFit | None:
    if not stages:
        return None
    return MemoryFit(max(stages, key=lambda s: s.total), gpu_gb * GB)


def size(value: float) -> str:
    """Bytes in decimal units, three significant digits at most: "60.7 GB", "512 kB", "0 B"."""
    for unit, scale in (("GB", GB), ("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            x = value / scale
            return f"{x:.1f} {unit}" if x < 100 else f"{x:.0f} {unit}"
    return f"{value:.0f} B"
