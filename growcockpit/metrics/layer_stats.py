"""Per-layer gradient, weight and update statistics.

Norms are computed with one fused `torch._foreach_norm` per layer group and
moved to the host once, so sampling costs a few kernel launches and a single
sync, not one `.item()` per tensor.
"""

from __future__ import annotations

import torch
from torch import nn

from growcockpit.grow.model_parts import get_layers
from growcockpit.protocol.events import LayerStat


class LayerStatsSampler:
    """Call `before_update()` before `optimizer.step()` and `collect()` after it."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self._before: list[list[torch.Tensor]] | None = None

    def before_update(self) -> list[float | None]:
        """Snapshot trainable weights (for the update ratio) and return grad norms per layer."""
        grad_norms: list[float | None] = []
        snapshot: list[list[torch.Tensor]] = []
        layers = get_layers(self.model)
        norms_to_read: list[torch.Tensor] = []
        for layer in layers:
            params = [p for p in layer.parameters() if p.requires_grad and p.grad is not None]
            snapshot.append([p.detach().clone() for p in params])
            if params:
                norms = torch._foreach_norm([p.grad for p in params])  # type: ignore[misc]
                norms_to_read.append(torch.linalg.vector_norm(torch.stack(norms)))
            else:
                norms_to_read.append(torch.tensor(float("nan")))
        values = (
            torch.stack([n.float().cpu() for n in norms_to_read]).tolist() if norms_to_read else []
        )
        for v in values:
            grad_norms.append(None if v != v else float(v))
        self._before = snapshot
        return grad_norms

    def collect(self, grad_norms: list[float | None]) -> list[LayerStat]:
        layers = get_layers(self.model)
        before = self._before or [[] for _ in layers]
        stats: list[LayerStat] = []
        for idx, layer in enumerate(layers):
            params = list(layer.parameters())
            trainable = any(p.requires_grad for p in params)
            weight = float(
                torch.linalg.vector_norm(
                    torch.stack(torch._foreach_norm([p.detach() for p in params]))
                )
            )
            ratio: float | None = None
            old = before[idx] if idx < len(before) else []
            if trainable and old:
                live = [p.detach() for p in params if p.requires_grad and p.grad is not None]
                if len(live) == len(old):
                    deltas = torch._foreach_sub(live, old)
                    upd = float(torch.linalg.vector_norm(torch.stack(torch._foreach_norm(deltas))))
                    ratio = upd / weight if weight > 0 else None
            stats.append(
                LayerStat(
                    id=idx,
                    trainable=trainable,
                    grad_norm=grad_norms[idx] if idx < len(grad_norms) else None,
                    weight_norm=weight,
                    update_ratio=ratio,
                )
            )
        self._before = None
        return stats
