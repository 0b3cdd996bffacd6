"""FSDP2 for the stage engine: shard a plain model, and gather it back where needed.

FSDP-wrapped modules refuse `deepcopy`, which every grow operator relies on, and their
parameters are `DTensor`s the operators do not know. So an operator that changes tensor
shapes (the V-cycle's) goes through state: each rank gathers the full weights
(`full_tensor`, a collective every rank makes in the same order), rebuilds the plain
model of the same class and config, and the unchanged operator table runs on it; the
result is sharded anew after its freeze (`requires_grad` is set before `fully_shard`, so
a frozen block never allocates a gradient and never joins a reduce-scatter). Depth
growth by `stack` never gathers: backend/parallel/fsdp_grow.py copies local shards instead.

The root of the sharding is the `LossModule` (the model plus its stage's forward), so its
forward hook gathers the embeddings and head however the staged forward reaches them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import DeviceMesh as DeviceMesh
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import (
    CPUOffloadPolicy,
    FSDPModule,
    MixedPrecisionPolicy,
    OffloadPolicy,
    fully_shard,
)
from torch.distributed.tensor import DTensor, distribute_tensor

from growcockpit.grow.model_parts import get_layers

_PARAM_DTYPES: dict[str, torch.dtype | None] = {"bf16": torch.bfloat16, "fp32": None}


def mesh_for(device: torch.device, world_size: int) -> DeviceMesh:
    """A 1-D mesh over the ranks; on CPU it must be named explicitly (gloo)."""
    return init_device_mesh(device.type, (world_size,))


@dataclass(frozen=True)
class Sharding:
    """Where and how: the ranks' mesh, the run's resolved precision, `cpu_offload`."""

    mesh: DeviceMesh
    precision: str
    offload: bool


def sharded_root(
    model: nn.Module, root_of: Callable[[nn.Module], nn.Module], how: Sharding
) -> tuple[nn.Module, nn.Module]:
    """Rank 0's weights on every rank, then `model` sharded under the root `root_of` builds
    around it; both returned (the same objects, now holding this rank's shards)."""
    broadcast_from_main(model)
    root = root_of(model)
    shard(root, model, how.mesh, how.precision, how.offload)
    return model, root


def shard(
    root: nn.Module, model: nn.Module, mesh: DeviceMesh, precision: str, offload: bool
) -> None:
    """`fully_shard` each block of `model`, then `root` (which holds `model`), in place."""
    wrap_shards(root, model, mesh, precision, offload)
    name_root(root)


def wrap_shards(
    root: nn.Module, model: nn.Module, mesh: DeviceMesh, precision: str, offload: bool
) -> None:
    """The `fully_shard` calls of `shard`, without naming the root (a model built on the
    meta device gets its storage and weights in between: backend/parallel/fsdp_grow.py)."""
    policy = MixedPrecisionPolicy(param_dtype=_PARAM_DTYPES[precision], reduce_dtype=torch.float32)
    off: OffloadPolicy = CPUOffloadPolicy() if offload else OffloadPolicy()
    for block in get_layers(model):
        fully_shard(block, mesh=mesh, mp_policy=policy, offload_policy=off)
    fully_shard(root, mesh=mesh, mp_policy=policy, offload_policy=off)


def name_root(root: nn.Module) -> None:
    """Name the root now: FSDP picks the first module to run forward, and an evaluation
    or loss probe that calls the model directly would otherwise make a block the root."""
    root._get_fsdp_state()._lazy_init()  # type: ignore[operator]


def is_sharded(model: nn.Module) -> bool:
    return any(isinstance(p, DTensor) for p in model.parameters())


def full_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every weight of a sharded `model`, whole, on every rank (collective, same order)."""
    out: dict[str, torch.Tensor] = {}
    for name, value in model.state_dict().items():
        full = value.full_tensor() if isinstance(value, DTensor) else value
        out[name] = full.detach().clone()
    return out


def plain_class(model: nn.Module) -> type[nn.Module]:
    """The model's own class under the one `fully_shard` made (FSDP<cls>(FSDPModule, cls))."""
    cls = type(model)
    if issubclass(cls, FSDPModule):
        return next(
            b for b in cls.__mro__[1:] if issubclass(b, nn.Module) and not issubclass(b, FSDPModule)
        )
    return cls


def unsharded(model: nn.Module, device: torch.device) -> nn.Module:
    """A plain copy of a sharded `model` (same class, config and weights) on `device`."""
    if not is_sharded(model):
        return model
    state = full_state(model)
    cls = plain_class(model)
    with torch.random.fork_rng(devices=[]):  # its throwaway init must not move dropout's stream
        plain = cls(model.config)
    missing, unexpected = plain.load_state_dict(state, strict=False)
    assert not unexpected, f"unexpected keys rebuilding {cls.__name__}: {unexpected}"
    tie = getattr(plain, "tie_weights", None)
    if callable(tie):
        tie()
    plain.train(model.training)
    return plain.to(device)


def broadcast_from_main(model: nn.Module) -> None:
    """Rank 0's weights on every rank before sharding (a fresh or grown block's random
    init agrees everywhere, as DDP's wrap-time broadcast guarantees)."""
    with torch.no_grad():
        for tensor in list(model.parameters()) + list(model.buffers()):
            dist.broadcast(tensor.data, src=0)


@contextlib.contextmanager
def root_gathered(root: nn.Module) -> Iterator[None]:
    """The root's own weights (embeddings, head) whole while something outside its forward
    (evaluation, a loss probe) calls the model directly; sharded again after."""
    if not isinstance(root, FSDPModule):
        yield
        return
    root.unshard()
    try:
        yield
    finally:
        root.reshard()


def load_optimizer_state(optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """Load a whole-tensor optimizer state (a DDP or one-process checkpoint); under FSDP
    each moment is cut to this rank's shard of its parameter (every rank read the same
    checkpoint: no communication). FSDP's own checkpoints are sharded
    (backend/state/fsdp_checkpoint.py)."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    slots_by_index = state["state"]
    for index, slots in slots_by_index.items():
        param = params[int(index)]
        if not isinstance(param, DTensor):
            continue
        for key, value in slots.items():
            if isinstance(value, torch.Tensor) and value.shape == param.shape:
                slots[key] = distribute_tensor(
                    value.to(param.device), param.device_mesh, param.placements, src_data_rank=None
                )
    optimizer.load_state_dict(state)
