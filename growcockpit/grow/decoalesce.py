"""De-coalescing D (small → large): the exact right inverse of C.

Per tensor: linear W ↦ T_out · W · F_in (output rows copied, input columns
split evenly), bias / LayerNorm v ↦ T v, embedding tables E ↦ (1/c) · E · Tᵀ;
depth: large block j ← copy of small block g(j) ("adjacent": j // 2, i.e.
interleaved duplication; "half": j mod L_s, i.e. Gong stacking).

Function preservation, width only (copying blocks in depth is
not function-preserving and is not meant to be):

- post-LN BERT with the multi-level recipe (c = 2): exact. Every LayerNorm
  sees a duplicated vector (same mean and variance), attention heads i and
  i + n_h/2 are copies of small head i with the same d_h, the embedding
  LayerNorm removes the ½, and the tied decoder's Tᵀ·T = 2·I cancels it.
- pre-LN GPT-2 with a tied head: the multi-level recipe is NOT
  function-preserving (the ½ on the embeddings scales the residual stream but
  not the blocks' outputs added to it). The default recipe for GPT-2
  ("preln-tied", see coalesce.py) copies the embeddings unscaled, so the
  residual stream is exactly T·h, and halves ln_f's γ and β (as staged
  training does), so the tied logits E·Tᵀ·(½·T·y) = E·y are exact.

C(D(θ)) == θ exactly for either recipe, as long as C and D use the same one.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from growcockpit.families import ModelShape
from growcockpit.grow.coalesce import (
    build_like,
    coalesced_shape,
    config_shape,
    config_with_shape,
    fill_state,
    layer_key,
    model_shape,
    recipe_scales,
    refuse_inexact_width,
    shape_change,
    tensor_rule,
    width_groupings,
    width_map,
)
from growcockpit.grow.model_parts import family_of, part
from growcockpit.grow.stack import GrowResult
from growcockpit.grow.width import depth_groups
from growcockpit.text.safe_text import quoted


def decoalesced_shape(small: ModelShape, *, width: bool, depth: bool) -> ModelShape:
    return ModelShape(
        small.hidden * 2 if width else small.hidden,
        small.heads * 2 if width else small.heads,
        small.ffn * 2 if width else small.ffn,
        small.layers * 2 if depth else small.layers,
        (small.kv_heads * 2 if width else small.kv_heads) if small.kv_heads else 0,
    )


@torch.no_grad()
def decoalesce_model(
    model: nn.Module,
    *,
    width: bool,
    depth: bool,
    pairing: str = "adjacent",
    target_config: Any = None,
    recipe: str = "auto",
) -> tuple[nn.Module, GrowResult]:
    """D: a new model with double the width and/or depth; `model` is left untouched.

    `target_config` (optional) is the large model's config, e.g. the level
    snapshot's: the result uses it (so every other field is that level's),
    after checking that coalescing it gives `model`'s shape. Without it the
    config is `model`'s with hidden, heads, FFN and/or layers doubled.
    """
    if not (width or depth):
        raise ValueError("decoalesce needs width=True and/or depth=True")
    family = family_of(model)
    small = model_shape(model)
    if width:
        refuse_inexact_width(model, family)
    if target_config is None:
        large = decoalesced_shape(small, width=width, depth=depth)
        config = config_with_shape(part(model, "config"), family, large)
    else:
        if getattr(target_config, "model_type", None) != family:
            raise ValueError(
                f"target_config is for {quoted(getattr(target_config, 'model_type', '?'))}, "
                f"the model is {quoted(family)}"
            )
        large = config_shape(target_config, family)
        expected = coalesced_shape(large, width=width, depth=depth)
        if expected != small:
            raise ValueError(
                f"cannot de-coalesce a model of {_describe(small)} into {_describe(large)}: "
                f"coalescing that target (width={width}, depth={depth}) gives {_describe(expected)}"
            )
        config = config_with_shape(target_config, family, large)
    groups = depth_groups(large.layers, pairing) if depth else [[i] for i in range(large.layers)]
    group_of = {j: g for g, members in enumerate(groups) for j in members}
    groupings = width_groupings(large) if width else {}
    scales = recipe_scales(family, recipe)
    new = build_like(model, config)
    source: dict[str, torch.Tensor] = model.state_dict()

    def tensor_for(name: str, current: torch.Tensor) -> torch.Tensor:
        key = layer_key(name)
        if key is None:
            x = source[name]
        else:
            prefix, j, rest = key
            x = source[f"{prefix}.{group_of[j]}.{rest}"]
        if width and x.is_floating_point():
            x = width_map(x, tensor_rule(name, family), groupings, scales, inverse=True)
        return x.clone()

    fill_state(new, tensor_for)
    layer_sources = {j: [group_of[j]] for j in range(large.layers)}
    new_ids = [j for members in groups for j in members[1:]] if depth else []
    what = " and ".join(w for w, on in (("width", width), ("depth", depth)) if on)
    detail = f"decoalesce {what}"
    if depth:
        detail += f", pairing={pairing}: " + ", ".join(
            f"{j}←{g[0]}" for j, g in layer_sources.items()
        )
    if width:
        detail += f"; heads {small.heads}→{large.heads} (heads i, i+{small.heads} ← head i)"
    sources: dict[int, int | None] = {j: group_of[j] for j in new_ids} if depth else {}
    return new, shape_change(
        "decoalesce", small, large, sorted(new_ids), sources, detail, layer_sources
    )


def _describe(s: ModelShape) -> str:
    return f"{s.layers} layers × width {s.hidden} ({s.heads} heads, FFN {s.ffn})"
