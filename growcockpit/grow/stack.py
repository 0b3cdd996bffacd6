"""Depth growth by stacking: MSLT (copy the top k) and Gong et al. (copy the bottom).

MSLT (Yang et al., 2020) and progressive stacking (Gong et al., 2019). Copies are bitwise equal to their source and share no
storage with it, so training the copy never touches the original.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from torch import nn

from growcockpit.families import spec_of
from growcockpit.families.spec import identity_init_refusal
from growcockpit.grow.model_parts import get_layers, part, set_layers
from growcockpit.plan.types import middle_insert_ids
from growcockpit.text.safe_text import quoted

INITS = ("copy", "zero")


@dataclass
class GrowResult:
    """What an operator changed, for the `grow` event and the freeze policy.

    `new_layer_ids`: layers that did not exist before (stack: the appended
    ones; decoalesce/interpolate with depth: every layer that is not the first
    of its group; coalesce: none). `source_of`: new layer → the one layer it is
    a copy of (None: freshly initialised). `layer_sources`: every layer of the
    result → the input layers it was made from (stack: itself or its source;
    coalesce: the group it averages; decoalesce: the small layer it copies).
    """

    operator: str
    from_layers: int
    to_layers: int
    from_width: int
    to_width: int
    new_layer_ids: list[int]
    source_of: dict[int, int | None]
    detail: str
    layer_sources: dict[int, list[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class StackPlan:
    """Where `stack` puts its `k` new blocks (`at`: index of the first) and what each
    copies (`sources`, old block ids; None: freshly initialised). Shared by the in-place
    operator below and the sharded one (backend/parallel/fsdp_grow.py), so both grow alike."""

    depth: int
    width: int
    source: str
    init: str
    at: int
    sources: tuple[int | None, ...]

    @property
    def k(self) -> int:
        return len(self.sources)

    def result(self) -> GrowResult:
        depth, k, at = self.depth, self.k, self.at
        source_of = {at + i: src for i, src in enumerate(self.sources)}
        layer_sources = {(j if j < at else j + k): [j] for j in range(depth)}
        layer_sources.update({dst: [] if src is None else [src] for dst, src in source_of.items()})
        detail = ", ".join(
            f"{dst}←{'init' if src is None else src}" for dst, src in source_of.items()
        )
        zero = ", init=zero" if self.init == "zero" else ""
        return GrowResult(
            operator="stack",
            from_layers=depth,
            to_layers=depth + k,
            from_width=self.width,
            to_width=self.width,
            new_layer_ids=list(range(at, at + k)),
            source_of=source_of,
            detail=f"source={self.source}{zero}: {detail}",
            layer_sources=layer_sources,
        )


def plan_stack(model: nn.Module, k: int, source: str = "top", init: str = "copy") -> StackPlan:
    """Check the options and place the `k` new blocks (see `stack_layers`)."""
    if init not in INITS:
        raise ValueError(f"unknown stack init {quoted(init)}: expected one of {', '.join(INITS)}")
    spec = spec_of(model)
    if init == "zero" and not spec.facts.identity_init:
        raise ValueError(identity_init_refusal(spec.name))
    depth = len(get_layers(model))
    if k < 1:
        raise ValueError(f"stack needs k >= 1 new layers, got {k}")
    if source in ("bottom", "middle") and k > depth:
        raise ValueError(
            f"stack source={quoted(source)} cannot copy {k} layers from a {depth}-layer model; "
            "use source='top' (cycles through the stack) or 'random'"
        )
    at = depth
    if source == "top":
        sources: list[int | None] = [(depth - k + i) % depth for i in range(k)]
    elif source == "bottom":
        sources = list(range(k))
    elif source == "middle":
        at = middle_insert_ids(depth, k)[0]
        sources = list(range(at - k, at))
    elif source == "random":
        sources = [None] * k
    else:
        raise ValueError(
            f"unknown stack source {quoted(source)}: expected top, bottom, middle or random"
        )
    width = int(part(model, "config.hidden_size"))
    return StackPlan(depth, width, source, init, at, tuple(sources))


def stack_layers(model: nn.Module, k: int, source: str = "top", init: str = "copy") -> GrowResult:
    """Add `k` blocks to `model`, in place (on top, or in the middle for "middle").

    source="top": new block L+i copies old block (L-k+i) mod L (MSLT: the current
    top k in order). For k > L the whole stack is cycled so that the last new
    block copies the old top: e.g. L=2, k=5 copies 1,0,1,0,1.
    source="bottom": new block L+i copies old block i (Gong; k = L doubles the depth).
    source="middle" (gradual middle stacking): the k blocks
    centred on the middle, ⌊(L−k)/2⌋ … +k−1, are copied and the copies inserted
    right after them; the blocks above shift up by k.
    source="random": fresh blocks initialised like the model's own.
    init="zero" (pre-LN GPT-2 only): the new blocks' residual
    output projections (attention and MLP `c_proj`, weight and bias) are
    zeroed, so each new block adds nothing and the grown model computes
    exactly the old function; gradients still reach those projections.
    """
    plan = plan_stack(model, k, source, init)
    layers = list(get_layers(model))
    at = plan.at
    new_layers = [
        copy.deepcopy(layers[src]) if src is not None else fresh_layer(model, at + i)
        for i, src in enumerate(plan.sources)
    ]
    if init == "zero":
        with torch.no_grad():
            for layer in new_layers:
                spec_of(model).zero_residual_outputs(layer)
    set_layers(model, layers[:at] + new_layers + layers[at:])
    return plan.result()


def fresh_layer(model: nn.Module, idx: int) -> nn.Module:
    """A newly initialised block `idx` for `model`, by the model's own `_init_weights`
    (draws from torch's global RNG, as the model's construction does)."""
    layer = spec_of(model).fresh_block(model, idx)
    ref = next(model.parameters())
    layer.to(device=ref.device, dtype=ref.dtype)
    layer.apply(part(model, "_init_weights"))
    return layer
