"""Per-layer gradient, weight and update statistics, on sampled steps only.

All of a step's tensors go through a handful of fused `torch._foreach_*` calls
(one norm per tensor, reduced per layer on the device in one segment sum) and
come to the host in one copy per call, so sampling costs a few kernel launches
and one sync, never one `.item()` or one `detach()` per tensor (it runs under
`no_grad`, so parameters go to the fused calls as they are). The update ratio
‖Δθ‖/‖θ‖ is what shows whether a stage's layers still learn: the weights that are
about to be stepped are snapshotted before `optimizer.step()` and compared after it. The sampler keeps
its own list of those parameters, because `zero_grad(set_to_none=True)` has
cleared their gradients by the time `collect()` runs.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import torch
from torch import nn

from growcockpit.grow.model_parts import get_layers
from growcockpit.protocol.events import LayerStat


def _per_layer_norms(tensors: list[torch.Tensor], sizes: list[int]) -> torch.Tensor:
    """The L2 norm of each consecutive group of `sizes` tensors (NaN for an empty group),
    in a fixed handful of operators whatever the number of layers: one fused norm per
    tensor, then one segment sum of their squares."""
    if not tensors:
        return torch.full((len(sizes),), float("nan"))
    owner, empty = _layout(tuple(sizes), tensors[0].device)
    squares = torch.stack(torch._foreach_norm(tensors)).float().square()
    per_layer = torch.zeros(len(sizes), device=owner.device).index_add_(0, owner, squares).sqrt()
    return per_layer if empty is None else per_layer.masked_fill(empty, float("nan"))


@functools.lru_cache(maxsize=64)
def _layout(
    sizes: tuple[int, ...], device: torch.device
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(the layer of each tensor, which layers have none) on `device`: made once per layout
    (a stage's), not per sample, so a sample copies nothing from the host to a GPU."""
    owner = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes, dtype=torch.long))
    empty = torch.tensor([size == 0 for size in sizes]) if 0 in sizes else None
    return owner.to(device), None if empty is None else empty.to(device)


def _floats(values: list[float]) -> list[float | None]:
    return [None if v != v else float(v) for v in values]


class LayerStatsSampler:
    """Call `before_update()` before `optimizer.step()` and `collect()` after it.

    `blocks`: the layers to report, for a model of no registered family (a tracked
    loop's own model); by default the family's blocks, read afresh on every call
    since an operator may have replaced them."""

    def __init__(self, model: nn.Module, blocks: Sequence[nn.Module] | None = None) -> None:
        self.model = model
        self.blocks = blocks
        self._stepped: list[list[torch.Tensor]] | None = None  # per layer: the params stepped
        self._before: list[torch.Tensor] = []  # their values before the step, flat

    def layers(self) -> Sequence[nn.Module]:
        if self.blocks is not None:
            return self.blocks
        return list(get_layers(self.model))

    @torch.no_grad()
    def before_update(self) -> list[float | None]:
        """Grad norm per layer (None for layers without gradients); snapshots trainable weights."""
        stepped: list[list[torch.Tensor]] = [
            [p for p in layer.parameters() if p.requires_grad and p.grad is not None]
            for layer in self.layers()
        ]
        flat = [p for group in stepped for p in group]
        self._stepped = stepped
        self._before = list(torch._foreach_mul(flat, 1.0)) if flat else []
        grads = [p.grad for group in stepped for p in group if p.grad is not None]
        norms = _per_layer_norms(grads, [len(g) for g in stepped])
        return _floats(norms.cpu().tolist()) if len(stepped) else []

    @torch.no_grad()
    def collect(
        self,
        grad_norms: list[float | None],
        fwd_ms: list[float | None] | None = None,
        bwd_ms: list[float | None] | None = None,
    ) -> list[LayerStat]:
        layers = self.layers()
        params = [list(layer.parameters()) for layer in layers]
        trainable = [any(p.requires_grad for p in group) for group in params]
        weights = _per_layer_norms([p for group in params for p in group], [len(g) for g in params])
        stepped = self._stepped or []
        after = [p for group in stepped for p in group]
        if stepped and len(stepped) == len(layers) and after:
            deltas = list(torch._foreach_sub(after, self._before))
            updates = _per_layer_norms(deltas, [len(g) for g in stepped])
        else:  # no optimizer step was sampled (or the model changed shape in between)
            updates = torch.full((len(layers),), float("nan"), device=weights.device)
        host = torch.stack([weights, updates.to(weights.device)]).cpu().tolist()
        self._stepped, self._before = None, []
        w_host, u_host = _floats(host[0]), _floats(host[1])
        stats = []
        for idx in range(len(layers)):
            w, u = w_host[idx], u_host[idx]
            stats.append(
                LayerStat(
                    id=idx,
                    trainable=trainable[idx],
                    grad_norm=grad_norms[idx] if idx < len(grad_norms) else None,
                    weight_norm=w,
                    update_ratio=(u / w) if u is not None and w else None,
                    fwd_ms=fwd_ms[idx] if fwd_ms and idx < len(fwd_ms) else None,
                    bwd_ms=bwd_ms[idx] if bwd_ms and idx < len(bwd_ms) else None,
                )
            )
        return stats
