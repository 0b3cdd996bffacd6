"""Carry Adam state across a stage change (`optim.optimizer_reset = false`).

The engine rebuilds the optimizer over exactly the new trainable set at every
stage; with `optimizer_reset = false` it then calls `carry_optimizer_state`:

- a parameter that survives the operator (the same tensor object, e.g. every
  old layer, the embeddings and the head after `stack_layers`, which grows the
  model in place) keeps its own state (`step`, `exp_avg`, `exp_avg_sq`, …);
- a block that `stack_layers` copied from another takes a copy of its
  source's state, tensor by tensor (Gong et al.'s optional carry-over
  duplicates the moments the same way; we keep the step count with them so
  Adam's bias correction stays consistent);
- blocks listed in `fresh_layers` start fresh even when they are copies: a
  gated (`ramp_steps`) or zero-initialised (`init = "zero"`) block starts
  from zero moments, since its source's moments describe
  gradients it does not get yet;
- everything else starts fresh. That includes every parameter of a model
  built by coalesce / decoalesce / interpolate: those are new tensors of new
  shapes, and the multi-level repo uses a fresh optimizer for each phase.

State is cloned, never shared, so the two optimizers never alias.
"""

from __future__ import annotations

from collections.abc import Collection

import torch
from torch import nn

from growcockpit.grow.model_parts import get_layers
from growcockpit.grow.stack import GrowResult


def copied_blocks(result: GrowResult | None, fresh_layers: Collection[int]) -> dict[int, int]:
    """New block → the block whose moments it copies: the blocks `stack` copied, less
    the ones that start fresh (the rule both the plain and the sharded carry follow)."""
    if result is None or result.operator != "stack":
        return {}
    return {
        dst: src
        for dst, src in result.source_of.items()
        if src is not None and dst not in fresh_layers
    }


def kept_blocks(result: GrowResult | None, depth: int) -> dict[int, int]:
    """Block of the grown model → the block it was before the operator, for blocks that
    keep their tensors (all of them with no operator; stack's old blocks, maybe shifted
    up by a middle insertion). Shape-changing operators keep none."""
    if result is None:
        return {i: i for i in range(depth)}
    if result.operator != "stack":
        return {}
    new = set(result.new_layer_ids)
    return {dst: srcs[0] for dst, srcs in result.layer_sources.items() if dst not in new}


def keeps_outer_tensors(result: GrowResult | None) -> bool:
    """Whether embeddings and head survive the operator (it grew the model in place)."""
    return result is None or result.operator == "stack"


@torch.no_grad()
def carry_optimizer_state(
    old: torch.optim.Optimizer,
    new: torch.optim.Optimizer,
    model: nn.Module,
    result: GrowResult | None = None,
    fresh_layers: Collection[int] = (),
) -> dict[str, int]:
    """Copy `old`'s per-parameter state into `new` (see the module doc).

    `model` is the model `new` optimizes; `result` is the operator's
    GrowResult (its `source_of` tells which blocks are copies). Returns counts:
    {"kept": surviving parameters, "copied": parameters of copied blocks,
    "fresh": parameters that start without state}.
    """
    copied_from: dict[int, nn.Parameter] = {}
    layers = get_layers(model)
    for dst, src in copied_blocks(result, fresh_layers).items():
        sources = dict(layers[src].named_parameters())
        for name, p in layers[dst].named_parameters():
            if name in sources and sources[name].shape == p.shape:
                copied_from[id(p)] = sources[name]
    counts = {"kept": 0, "copied": 0, "fresh": 0}
    for group in new.param_groups:
        for p in group["params"]:
            source = p if p in old.state else copied_from.get(id(p))
            state = old.state.get(source) if source is not None else None
            if not state:
                counts["fresh"] += 1
                continue
            new.state[p] = {
                k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in state.items()
            }
            counts["kept" if source is p else "copied"] += 1
    return counts
