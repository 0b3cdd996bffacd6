"""Interpolation: θ_k ← (1 − α)·θ_k + α·D(θ_{k+1}) on every tensor.

θ_k (`saved`) is this run's level-k checkpoint taken just before coalescing
(never another run's); θ_{k+1} (`small`) is the
trained coalesced model. Mixing in θ_k breaks the symmetry of D's duplicated
neurons. α = 0 gives θ_k bitwise, α = 1 gives D(θ_{k+1}) bitwise; in between
every element lies between its two endpoints (the result is clamped to them,
which only ever moves a value by a rounding step).
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from growcockpit.grow.coalesce import fill_state, model_shape
from growcockpit.grow.decoalesce import decoalesce_model
from growcockpit.grow.model_parts import family_of, part
from growcockpit.grow.stack import GrowResult


@torch.no_grad()
def interpolate_model(
    saved: nn.Module,
    small: nn.Module,
    *,
    alpha: float,
    width: bool,
    depth: bool,
    pairing: str = "adjacent",
    recipe: str = "auto",
) -> tuple[nn.Module, GrowResult]:
    """A new model of `saved`'s shape and config; neither input is modified.

    Raises ValueError when D(`small`) cannot have `saved`'s shapes (wrong
    family, width/depth flags or partner).
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if family_of(saved) != family_of(small):
        raise ValueError(
            f"interpolate: the saved level is {family_of(saved)}, the small model "
            f"{family_of(small)}"
        )
    saved_shape, small_shape = model_shape(saved), model_shape(small)
    try:
        grown, result = decoalesce_model(
            small,
            width=width,
            depth=depth,
            pairing=pairing,
            target_config=part(saved, "config"),
            recipe=recipe,
        )
    except ValueError as exc:
        raise ValueError(
            f"interpolate: the saved level ({saved_shape.layers} layers × width "
            f"{saved_shape.hidden}) is not what de-coalescing the small model gives "
            f"({small_shape.layers} layers × width {small_shape.hidden}, width={width}, "
            f"depth={depth}); the partner must be "
            f"this run's checkpoint taken just before coalescing. {exc}"
        ) from exc
    saved_state: dict[str, torch.Tensor] = saved.state_dict()
    grown_state: dict[str, torch.Tensor] = grown.state_dict()
    for name, value in grown_state.items():
        if name not in saved_state or saved_state[name].shape != value.shape:
            got = tuple(saved_state[name].shape) if name in saved_state else "missing"
            raise ValueError(
                f"interpolate: {name} of D(small) has shape {tuple(value.shape)}, "
                f"the saved level has {got}"
            )

    def tensor_for(name: str, current: torch.Tensor) -> torch.Tensor:
        s = saved_state[name]
        d = grown_state[name].to(device=s.device)
        if not s.is_floating_point() or alpha == 0.0:
            return s.clone()
        if alpha == 1.0:
            return d.clone()
        mixed = (1.0 - alpha) * s + alpha * d
        return torch.minimum(torch.maximum(mixed, torch.minimum(s, d)), torch.maximum(s, d))

    fill_state(grown, tensor_for)
    grown.train(saved.training)
    detail = f"interpolate alpha={alpha}: (1-α)·saved + α·D(small); {result.detail}"
    return grown, dataclasses.replace(result, operator="interpolate", detail=detail)
