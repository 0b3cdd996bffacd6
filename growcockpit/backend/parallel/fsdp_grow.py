"""A stage change on an FSDP2-sharded model: which path each operator takes, and the
cheap one that never gathers the weights.

Two paths, by whether the operator changes the shape of tensors that already exist:

| operator | path |
|---|---|
| `continue`, `stack` (every `source`, `init`, with or without `ramp_steps`) | local shards |
| `coalesce`, `decoalesce`, `interpolate` (width and/or depth) | gather, apply, re-shard |

Local shards: `stack` keeps every old block's tensors and only adds blocks that are
copies of old ones (or freshly initialised), and the embeddings and head keep their
shapes. So the grown model is built as structure only (on the meta device), sharded
on the same mesh, and every parameter's local shard is copied from the old model's
local shard it comes from (the same placement of a tensor of the same shape is the
same slice on each rank): no collective and no whole weight on any rank. A freshly
initialised block (`source = "random"`) is the exception: it is drawn whole, as the
plain operator draws it, rank 0's copy broadcast, and each rank keeps its slice. Where
the blocks go and what they copy is `grow.stack.plan_stack`, the plan the in-place
operator follows, so both paths grow alike.

Gather: the V-cycle maps mix whole tensors (averaging rows, columns and blocks), so
every rank gathers the whole model, the unchanged operator runs on it, and the result
is sharded anew (backend/parallel/fsdp.py). A coalesce keeps its level snapshot whole on every
rank (the interpolation back needs it).

Adam moments (`optimizer_reset = false`) follow the plain path's rule
(grow/optimizer_state.py): a kept tensor keeps its moments, a copied block copies its
source's, the rest start fresh. They are matched by parameter name through the same
block maps; a moment whose new shard is the same slice as the old one is copied
locally, any other one is gathered whole and cut to the new shard.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.distributed.tensor import DTensor, distribute_tensor

from growcockpit.backend.parallel.fsdp import (
    Sharding,
    broadcast_from_main,
    name_root,
    plain_class,
    wrap_shards,
)
from growcockpit.families import spec_of
from growcockpit.grow import GrowResult, get_layers
from growcockpit.grow.optimizer_state import copied_blocks, keeps_outer_tensors, kept_blocks
from growcockpit.grow.stack import fresh_layer, plan_stack
from growcockpit.plan.operators import OPERATORS, operators_where
from growcockpit.plan.types import Stage

LOCAL_OPERATORS = frozenset(operators_where(lambda spec: spec.shard_local))


@dataclass
class LocalGrowth:
    """A grown sharded model not yet materialised: its structure on the meta device and
    where each of its blocks' shards comes from."""

    old: nn.Module  # the sharded model before the operator
    skeleton: nn.Module  # the grown model's structure (meta device)
    block_from: dict[int, int]  # new block -> the old block whose shards it copies
    fresh: dict[int, nn.Module] = field(default_factory=dict)  # new block -> whole fresh block
    zeroed: tuple[int, ...] = ()  # blocks whose residual outputs start at zero


@dataclass
class ShardedChange:
    """What configure_training needs of a stage change under FSDP: the sharded model
    before it (moments are matched by name against it) and, on the local path, the growth
    to materialise."""

    old: nn.Module
    local: LocalGrowth | None


def takes_local_path(stage: Stage) -> bool:
    return stage.enter in LOCAL_OPERATORS


def grow_locally(model: nn.Module, stage: Stage) -> tuple[LocalGrowth, GrowResult | None]:
    """Plan `stage`'s operator on the sharded `model` (a `LOCAL_OPERATORS` one)."""
    depth = len(get_layers(model))
    if not OPERATORS[stage.enter].changes_model:  # continue: every block from itself
        return LocalGrowth(model, skeleton_of(model, depth), {i: i for i in range(depth)}), None
    plan = plan_stack(model, stage.layers - depth, stage.source, stage.init)
    result = plan.result()
    block_from = kept_blocks(result, depth) | {
        dst: src for dst, src in result.source_of.items() if src is not None
    }
    fresh: dict[int, nn.Module] = {}
    for dst, src in result.source_of.items():
        if src is None:  # drawn in order, as stack_layers draws them
            fresh[dst] = fresh_layer(model, dst)
            broadcast_from_main(fresh[dst])
    zeroed = tuple(result.new_layer_ids) if stage.init == "zero" else ()
    growth = LocalGrowth(model, skeleton_of(model, result.to_layers), block_from, fresh, zeroed)
    return growth, result


def skeleton_of(model: nn.Module, depth: int) -> nn.Module:
    """`model`'s class at `depth` blocks, structure only: parameters on the meta device."""
    config = copy.deepcopy(model.config)
    spec_of(model).set_depth(config, depth)
    with torch.random.fork_rng(devices=[]), torch.device("meta"):
        skeleton = plain_class(model)(config)
    skeleton.train(model.training)
    return skeleton


def materialise(
    growth: LocalGrowth,
    root_of: Callable[[nn.Module], nn.Module],
    how: Sharding,
    device: torch.device,
) -> tuple[nn.Module, nn.Module]:
    """Shard the skeleton under the root `root_of` builds, give it storage, fill every
    shard from its source (module doc); the model and the root."""
    model = growth.skeleton
    root = root_of(model)
    wrap_shards(root, model, how.mesh, how.precision, how.offload)
    root.to_empty(device=torch.device("cpu") if how.offload else device)
    _fill(growth, model)
    name_root(root)
    return model, root


@torch.no_grad()
def _fill(growth: LocalGrowth, model: nn.Module) -> None:
    spec = spec_of(model)
    old_tensors = _tensors(growth.old)
    prefix = spec.layers_path + "."
    for name, tensor in _tensors(model).items():
        block, rest = _block_of(name, prefix)
        if block is not None and block in growth.fresh:
            _set(tensor, _whole(growth.fresh[block], rest))
            continue
        source = name if block is None else f"{prefix}{growth.block_from[block]}.{rest}"
        _set(tensor, old_tensors[source])
    for block in growth.zeroed:
        spec.zero_residual_outputs(get_layers(model)[block])


def _tensors(model: nn.Module) -> dict[str, torch.Tensor]:
    return dict(model.named_parameters()) | dict(model.named_buffers())


def _block_of(name: str, prefix: str) -> tuple[int | None, str]:
    if not name.startswith(prefix):
        return None, name
    index, _, rest = name[len(prefix) :].partition(".")
    return int(index), rest


def _whole(block: nn.Module, name: str) -> torch.Tensor:
    tensor: torch.Tensor = _tensors(block)[name]
    return tensor


def _set(target: torch.Tensor, source: torch.Tensor) -> None:
    """Copy `source` into `target`: shard to shard when they are the same slice, else the
    whole `source` cut to `target`'s shard."""
    local = target.to_local() if isinstance(target, DTensor) else target
    local.copy_(_slice_like(source, target))


def _slice_like(source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """`source` (whole or a DTensor of `target`'s shape) as `target`'s local shard."""
    if not isinstance(target, DTensor):
        return source.full_tensor() if isinstance(source, DTensor) else source
    if isinstance(source, DTensor) and (
        source.shape == target.shape
        and source.device_mesh == target.device_mesh
        and source.placements == target.placements
    ):
        local: torch.Tensor = source.to_local()
        return local
    whole = source.full_tensor() if isinstance(source, DTensor) else source
    cut = distribute_tensor(
        whole.to(target.device), target.device_mesh, target.placements, src_data_rank=None
    )
    return cut.to_local()


@torch.no_grad()
def carry_sharded_optimizer_state(
    old: torch.optim.Optimizer,
    old_model: nn.Module,
    new: torch.optim.Optimizer,
    model: nn.Module,
    result: GrowResult | None,
    fresh_layers: list[int],
) -> dict[str, int]:
    """`carry_optimizer_state` for sharded models: moments matched by parameter name
    through the same block maps, each cut to the new parameter's shard (module doc).
    Counts as the plain one returns them."""
    prefix = spec_of(model).layers_path + "."
    kept = kept_blocks(result, len(get_layers(model)))
    copied = copied_blocks(result, fresh_layers)
    old_params = dict(old_model.named_parameters())
    names = {id(p): n for n, p in model.named_parameters()}
    counts = {"kept": 0, "copied": 0, "fresh": 0}
    for group in new.param_groups:
        for p in group["params"]:
            kind, source = _moment_source(names[id(p)], prefix, kept, copied, result)
            old_param = old_params.get(source) if source is not None else None
            state = old.state.get(old_param) if old_param is not None else None
            if not state or old_param is None or old_param.shape != p.shape:
                counts["fresh"] += 1
                continue
            new.state[p] = {k: _moment(v, old_param, p) for k, v in state.items()}
            counts[kind] += 1
    return counts


def _moment_source(
    name: str,
    prefix: str,
    kept: dict[int, int],
    copied: dict[int, int],
    result: GrowResult | None,
) -> tuple[str, str | None]:
    block, rest = _block_of(name, prefix)
    if block is None:
        return "kept", name if keeps_outer_tensors(result) else None
    if block in copied:
        return "copied", f"{prefix}{copied[block]}.{rest}"
    if block in kept:
        return "kept", f"{prefix}{kept[block]}.{rest}"
    return "fresh", None


def _moment(value: Any, old_param: torch.Tensor, param: torch.Tensor) -> Any:
    """A moment of `old_param` as one of `param` (a per-parameter tensor moves to the new
    shard; a scalar such as Adam's step is cloned)."""
    if not isinstance(value, torch.Tensor):
        return value
    if value.shape != old_param.shape or not isinstance(param, DTensor):
        return value.clone()
    local = _slice_like(value, param).clone()
    return DTensor.from_local(
        local, param.device_mesh, param.placements, shape=param.shape, stride=param.stride()
    )
