"""Coalescing C (large → small), and the per-tensor rules it shares with D.

Per tensor (weights as out×in; GPT-2's Conv1D stores in×out and is handled
by axis, not by transposing):

- linear weight W ↦ F_out · W · T_in (rows averaged, input-column pairs summed);
- bias, LayerNorm γ and β: v ↦ F v;
- embedding tables (word, position, token-type; and the decoder/LM head tied
  to the word table): E ↦ c · E · Fᵀ;
- depth: small block i = element-wise mean of the blocks of group G_i
  ("adjacent": 2i, 2i+1; "half": i, i + L/2); embeddings and head pass through
  the depth map unchanged;
- vocabulary-sized tensors (decoder bias) and position counts are unchanged.

Recipes (the embedding scale c and GPT-2's final LayerNorm):

- ``"multilevel"``: the authors' repo: c = 2 for every embedding table, ln_f
  mapped like any LayerNorm. Exact inverse of D and function-preserving D for
  post-LN BERT (the embedding LayerNorm absorbs the ½ of D; the tied decoder
  sees Tᵀ·T = 2·I, cancelled by the ½).
- ``"preln-tied"``: for pre-LN GPT-2 with a tied head (staged
  training's fix): c = 1 (D copies the embeddings unscaled, so the residual
  stream is exactly T·h), and ln_f's γ, β get the factor instead: C doubles
  them, D halves them, which cancels the 2× that Tᵀ·T puts on tied logits.
  D is then exactly function-preserving, and C is still D's exact inverse.
- ``"preln-untied"``: for pre-norm decoders with an untied head (Llama): c = 1
  and no norm factor; the head's input columns are split by D like any input
  side, so D is exactly function-preserving (RMSNorm sees the copied stream's
  unchanged mean square).
- ``"auto"`` (default): the family's first recipe (plan/families.py):
  multilevel for BERT, preln-tied for GPT-2, preln-untied for Llama.

C is not function-preserving (it is a lossy projection); it is the exact
inverse of D: C(D(θ)) == θ.
"""

from __future__ import annotations

import copy
import functools
import re
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from growcockpit.families import FAMILY_SPECS, ModelShape, TensorRule, spec_for
from growcockpit.grow.model_parts import family_of, part
from growcockpit.grow.stack import GrowResult
from growcockpit.grow.width import Grouping, depth_groups
from growcockpit.text.safe_text import quoted

RECIPES = ("auto", "multilevel", "preln-tied", "preln-untied")


@functools.cache
def _layer_re() -> re.Pattern[str]:
    """Block tensor names of every family (built on first use: it imports every family)."""
    paths = "|".join(re.escape(s.layers_path) for s in FAMILY_SPECS.values())
    return re.compile("^(" + paths + r")\.(\d+)\.(.+)$")


def tensor_rule(name: str, family: str) -> TensorRule:
    """How the width maps act on the state-dict tensor `name` (fails loudly if unknown)."""
    return spec_for(family).tensor_rule(name)


@dataclass(frozen=True)
class Scales:
    """Factors C multiplies by (D divides by the same)."""

    embedding: float
    ln_f: float

    def of(self, rule: TensorRule) -> float:
        if rule.scale == "embedding":
            return self.embedding
        if rule.scale == "ln_f":
            return self.ln_f
        return 1.0


_RECIPE_SCALES = {
    "multilevel": Scales(embedding=2.0, ln_f=1.0),
    "preln-tied": Scales(embedding=1.0, ln_f=2.0),
    "preln-untied": Scales(embedding=1.0, ln_f=1.0),
}


def recipe_scales(family: str, recipe: str) -> Scales:
    """The scales of `recipe` ("auto": the family's default, plan/families.py)."""
    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {quoted(recipe)}: expected one of {', '.join(RECIPES)}")
    allowed = spec_for(family).facts.width_recipes
    if recipe == "auto":
        recipe = allowed[0]
    if recipe not in allowed:
        raise ValueError(
            f'recipe "{recipe}" moves the embedding scale onto a final LayerNorm that {family} '
            "does not have: de-coalescing with it changes the function; use recipe="
            + " or ".join(f'"{r}"' for r in (*allowed, "auto"))
        )
    return _RECIPE_SCALES[recipe]


def shape_change(
    operator: str,
    before: ModelShape,
    after: ModelShape,
    new_layer_ids: list[int],
    source_of: dict[int, int | None],
    detail: str,
    layer_sources: dict[int, list[int]],
) -> GrowResult:
    """The `GrowResult` of an operator that changes depth and width (coalesce, decoalesce)."""
    return GrowResult(
        operator=operator,
        from_layers=before.layers,
        to_layers=after.layers,
        from_width=before.hidden,
        to_width=after.hidden,
        new_layer_ids=new_layer_ids,
        source_of=source_of,
        detail=detail,
        layer_sources=layer_sources,
    )


def model_shape(model: nn.Module) -> ModelShape:
    return config_shape(part(model, "config"), family_of(model))


def config_shape(config: Any, family: str) -> ModelShape:
    return spec_for(family).shape(config)


def width_groupings(large: ModelShape) -> dict[str, Grouping]:
    """Head-aligned pairings of the large model's axes (see width.py)."""
    if large.heads % 2:
        raise ValueError(
            f"width coalescing merges head i with head i + n_h/2, so it needs an even "
            f"number of heads; this model has {large.heads}"
        )
    if large.ffn % 2:
        raise ValueError(
            f"width coalescing pairs FFN unit j with unit j + FFN/2, so it needs an even FFN "
            f"width; this model has {large.ffn}"
        )
    if large.kv % 2:
        raise ValueError(
            f"width coalescing merges kv head j with kv head j + n_kv/2, so it needs an even "
            f"number of key/value heads; this model has {large.kv}"
        )
    h = Grouping.paired(large.hidden, large.head_dim)
    return {
        "h": h,
        "qkv": Grouping.sections(h, 3),
        "kv": Grouping.paired(large.kv * large.head_dim, large.head_dim),
        # unit j with unit j + FFN/2: the same pairs as chunks of FFN / n_h (the repo's
        # head-count alignment) where n_h divides FFN, and the MLP needs nothing more
        "ffn": Grouping.paired(large.ffn, large.ffn // 2),
    }


def refuse_inexact_width(model: nn.Module, family: str) -> None:
    """ValueError naming why a width map would not be exact on `model` (tied Llama)."""
    problem = spec_for(family).width_problem(model)
    if problem:
        raise ValueError(problem)


def coalesced_shape(large: ModelShape, *, width: bool, depth: bool) -> ModelShape:
    if width and (large.hidden % 2 or large.heads % 2 or large.ffn % 2):
        raise ValueError(
            f"cannot halve width {large.hidden} / {large.heads} heads / FFN {large.ffn}: "
            "all three must be even"
        )
    if depth and large.layers % 2:
        raise ValueError(f"cannot halve depth {large.layers}: coalescing merges pairs of layers")
    return ModelShape(
        large.hidden // 2 if width else large.hidden,
        large.heads // 2 if width else large.heads,
        large.ffn // 2 if width else large.ffn,
        large.layers // 2 if depth else large.layers,
        (large.kv_heads // 2 if width else large.kv_heads) if large.kv_heads else 0,
    )


def config_with_shape(config: Any, family: str, shape: ModelShape) -> Any:
    """A copy of `config` (dropout, vocab, positions, attention backend…) at `shape`."""
    new = copy.deepcopy(config)
    spec_for(family).with_shape(new, shape)
    attn = getattr(config, "_attn_implementation", None)
    if attn is not None:
        new._attn_implementation = attn
    return new


def build_like(model: nn.Module, config: Any) -> nn.Module:
    """An instance of `model`'s class for `config`, on its device and dtype, same mode.

    Weight initialisation is skipped where transformers allows it: every
    parameter is overwritten by the operator right after.
    """
    cls: Any = type(model)
    try:
        from transformers.initialization import no_init_weights

        with no_init_weights():
            new: nn.Module = cls(config)
        part(new, "tie_weights")()  # no_init_weights also skips tying
        if _tied_groups(new) != _tied_groups(model):
            new = cls(config)
    except ImportError:  # pragma: no cover - older transformers
        new = cls(config)
    if _tied_groups(new) != _tied_groups(model):
        raise ValueError(
            f"the new model ties {_tied_groups(new)}, the source {_tied_groups(model)}: "
            "cannot map tied weights"
        )
    ref = next(model.parameters())
    new.to(device=ref.device, dtype=ref.dtype)
    new.train(model.training)
    return new


def _tied_groups(model: nn.Module) -> list[list[str]]:
    """Names of parameters that share one tensor (e.g. the tied decoder and word table)."""
    names: dict[int, list[str]] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), []).append(name)
    return sorted(sorted(n) for n in names.values() if len(n) > 1)


def layer_key(name: str) -> tuple[str, int, str] | None:
    """("transformer.h", 3, "attn.c_attn.weight") for a block tensor, else None."""
    m = _layer_re().match(name)
    if m is None:
        return None
    return m.group(1), int(m.group(2)), m.group(3)


def width_map(
    x: torch.Tensor,
    rule: TensorRule,
    groupings: dict[str, Grouping],
    scales: Scales,
    *,
    inverse: bool,
) -> torch.Tensor:
    """C (inverse=False) or D (inverse=True) of one tensor along its width axes."""
    for dim, kind, role in rule.axes:
        g = groupings[kind]
        if inverse:
            x = g.copy(x, dim) if role == "row" else g.split(x, dim)
        else:
            x = g.mean(x, dim) if role == "row" else g.sum(x, dim)
    factor = scales.of(rule)
    if factor != 1.0:
        x = x / factor if inverse else x * factor
    return x


def fill_state(dst: nn.Module, tensor_for: Any) -> None:
    """Load `tensor_for(name, dst_tensor)` into every state tensor of `dst`."""
    state = dst.state_dict()
    new_state = {}
    for name, current in state.items():
        value = tensor_for(name, current)
        if value.shape != current.shape:
            raise ValueError(
                f"{name}: mapped tensor has shape {tuple(value.shape)}, "
                f"the new model needs {tuple(current.shape)}"
            )
        new_state[name] = value.to(dtype=current.dtype)
    dst.load_state_dict(new_state, strict=True)


@torch.no_grad()
def coalesce_model(
    model: nn.Module,
    *,
    width: bool,
    depth: bool,
    pairing: str = "adjacent",
    recipe: str = "auto",
) -> tuple[nn.Module, GrowResult]:
    """C: a new model with half the width and/or depth; `model` is left untouched.

    Width: hidden, heads and FFN halve (head dim stays); depth: layers halve,
    small block i = mean of group i (`pairing`). See the module doc for the
    per-tensor rules and `recipe`.
    """
    if not (width or depth):
        raise ValueError("coalesce needs width=True and/or depth=True")
    family = family_of(model)
    large = model_shape(model)
    small = coalesced_shape(large, width=width, depth=depth)
    if width:
        refuse_inexact_width(model, family)
    groups = depth_groups(large.layers, pairing) if depth else [[i] for i in range(large.layers)]
    groupings = width_groupings(large) if width else {}
    scales = recipe_scales(family, recipe)
    new = build_like(model, config_with_shape(part(model, "config"), family, small))
    source: dict[str, torch.Tensor] = model.state_dict()

    def tensor_for(name: str, current: torch.Tensor) -> torch.Tensor:
        key = layer_key(name)
        if key is None:
            x = source[name]
        else:
            prefix, i, rest = key
            members = [source[f"{prefix}.{j}.{rest}"] for j in groups[i]]
            x = members[0] if len(members) == 1 else torch.stack(members).mean(dim=0)
        if width and x.is_floating_point():
            x = width_map(x, tensor_rule(name, family), groupings, scales, inverse=False)
        return x.clone()

    fill_state(new, tensor_for)
    layer_sources = {i: list(g) for i, g in enumerate(groups)}
    what = " and ".join(w for w, on in (("width", width), ("depth", depth)) if on)
    detail = f"coalesce {what}"
    if depth:
        detail += f", pairing={pairing}: " + ", ".join(
            f"{i}←mean({'+'.join(map(str, g))})" for i, g in layer_sources.items()
        )
    if width:
        detail += f"; heads {large.heads}→{small.heads} (head i ← heads i, i+{large.heads // 2})"
    return new, shape_change("coalesce", large, small, [], {}, detail, layer_sources)
