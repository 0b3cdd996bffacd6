"""Modelled bytes each rank sends per optimizer step, stage by stage, under DDP or FSDP.

MSLT's communication claim: a frozen block's gradient is never reduced, so gradient
traffic falls by the frozen fraction. bench/fsdp_comm.py counts what each rank really
hands to the collectives and prints it against this model.

Payloads (what a rank hands to one kind of collective per step):
- DDP: one all-reduce of the trainable gradients (fp32) per step; the micro-batches
  before the last skip it (`no_sync`).
- FSDP, per micro-batch (FSDP2 reduces every micro-batch): an all-gather of every
  block and of the root (embeddings and head) in the forward, frozen blocks included,
  at the compute dtype; again for each block that takes a backward (the root stays
  gathered from forward to backward), and once more for the block below the lowest
  such block when the bottom is frozen (FSDP2 prefetches the next block of the backward
  order before it knows that no gradient reaches it); a reduce-scatter (fp32) of each
  trainable parameter's gradient.

Bytes sent, for a payload of S bytes whole (ring algorithms): an all-reduce sends
2(N − 1)/N · S per rank, an all-gather and a reduce-scatter (N − 1)/N · S. FSDP pads
each parameter's first dimension to a multiple of N; the model leaves that out (a few
rows at most). Small host messages (the loss, the gradient norm, the command count)
are not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from growcockpit.plan.footprint import StageFootprint, stage_footprints
from growcockpit.plan.memory import STATE_BYTES, Strategy, compute_bytes
from growcockpit.plan.types import Plan


@dataclass(frozen=True)
class StageTraffic:
    """One stage's payloads per step on one rank (bytes, whole tensors) and bytes sent."""

    index: int
    name: str
    strategy: Strategy
    ranks: int
    all_reduce: float
    all_gather: float
    reduce_scatter: float

    @property
    def gradient(self) -> float:
        """Payload of the gradient collectives (all-reduce or reduce-scatter)."""
        return self.all_reduce + self.reduce_scatter

    @property
    def gradient_sent(self) -> float:
        """Bytes this rank sends per step for gradients (the part freezing removes)."""
        share = (self.ranks - 1) / self.ranks if self.ranks > 1 else 0.0
        return share * (2 * self.all_reduce + self.reduce_scatter)

    @property
    def sent(self) -> float:
        """Bytes this rank sends per step (ring algorithms, module doc)."""
        n = self.ranks
        if n <= 1:
            return 0.0
        share = (n - 1) / n
        return 2 * share * self.all_reduce + share * (self.all_gather + self.reduce_scatter)


def stage_traffic(
    fp: StageFootprint, strategy: Strategy, ranks: int, precision: str, accum: int = 1
) -> StageTraffic:
    """One stage's payloads per step (module doc)."""
    grads = fp.trainable * STATE_BYTES
    if strategy == "ddp":
        return StageTraffic(fp.index, fp.name, strategy, ranks, grads, 0.0, 0.0)
    a = compute_bytes(precision)
    prefetched = 1 if 0 < fp.autograd_blocks < fp.layers else 0
    gathered = (fp.layers + fp.autograd_blocks + prefetched) * fp.parts.block + fp.root
    micro = max(1, accum)
    return StageTraffic(
        fp.index, fp.name, strategy, ranks, 0.0, gathered * a * micro, grads * micro
    )


def plan_traffic(
    plan: Plan, ranks: int, strategy: Strategy | None = None, precision: str | None = None
) -> list[StageTraffic]:
    """Every stage's per-rank traffic per step; the plan's own strategy and precision by default."""
    how: Strategy = strategy or plan.distributed.strategy
    dtype = precision or plan.optim.precision
    accum = plan.optim.grad_accum_steps
    return [stage_traffic(fp, how, ranks, dtype, accum) for fp in stage_footprints(plan)]
