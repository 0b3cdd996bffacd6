"""Depth growth by stacking: MSLT (copy the top k) and Gong et al. (copy the bottom).

methods.md §1 and §3. Copies are bitwise equal to their source and share no
storage with it, so training the copy never touches the original.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from torch import nn

from growcockpit.grow.model_parts import family_of, get_layers, part, set_layers


@dataclass
class GrowResult:
    """What an operator changed, for the `grow` event and the freeze policy."""

    operator: str
    from_layers: int
    to_layers: int
    from_width: int
    to_width: int
    new_layer_ids: list[int]
    source_of: dict[int, int | None]
    detail: str


def stack_layers(model: nn.Module, k: int, source: str = "top") -> GrowResult:
    """Append `k` blocks on top of `model`, in place.

    source="top": new block L+i copies old block L-k+i (MSLT, current top k in order).
    source="bottom": new block L+i copies old block i (Gong; k = L doubles the depth).
    source="random": fresh blocks initialised like the model's own.
    """
    layers = list(get_layers(model))
    depth = len(layers)
    if k < 1:
        raise ValueError(f"stack needs k >= 1 new layers, got {k}")
    if source in ("top", "bottom") and k > depth:
        raise ValueError(
            f"stack source={source!r} cannot copy {k} layers from a {depth}-layer model"
        )
    width = int(part(model, "config.hidden_size"))
    source_of: dict[int, int | None] = {}
    new_layers: list[nn.Module] = []
    for i in range(k):
        if source == "top":
            src: int | None = depth - k + i
        elif source == "bottom":
            src = i
        elif source == "random":
            src = None
        else:
            raise ValueError(f"unknown stack source {source!r}: expected top, bottom or random")
        new_layers.append(
            copy.deepcopy(layers[src]) if src is not None else _fresh_layer(model, depth + i)
        )
        source_of[depth + i] = src
    set_layers(model, layers + new_layers)
    detail = ", ".join(f"{dst}←{'init' if src is None else src}" for dst, src in source_of.items())
    return GrowResult(
        operator="stack",
        from_layers=depth,
        to_layers=depth + k,
        from_width=width,
        to_width=width,
        new_layer_ids=list(range(depth, depth + k)),
        source_of=source_of,
        detail=f"source={source}: {detail}",
    )


def _fresh_layer(model: nn.Module, idx: int) -> nn.Module:
    config = part(model, "config")
    if family_of(model) == "bert":
        from transformers.models.bert.modeling_bert import BertLayer

        layer: nn.Module = BertLayer(config, layer_idx=idx)  # type: ignore[no-untyped-call]
    else:
        from transformers.models.gpt2.modeling_gpt2 import GPT2Block

        layer = GPT2Block(config, layer_idx=idx)  # type: ignore[no-untyped-call]
    ref = next(model.parameters())
    layer.to(device=ref.device, dtype=ref.dtype)
    layer.apply(part(model, "_init_weights"))
    return layer
