"""Per-layer gradient, weight and update statistics.

Each quantity is one fused `torch._foreach_norm` per layer, combined on the
device and copied to the host once per call, so sampling costs a few kernel
launches and one sync, never one `.item()` per tensor.
"""

from __future__ import annotations

import torch
from torch import nn

from growcockpit.grow.model_parts import get_layers
from growcockpit.protocol.events import LayerStat


def _group_norm(tensors: list[torch.Tensor]) -> torch.Tensor:
    return torch.linalg.vector_norm(torch.stack([n.float() for n in torch._foreach_norm(tensors)]))


class LayerStatsSampler:
    """Call `before_update()` before `optimizer.step()` and `collect()` after it."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self._before: list[list[torch.Tensor]] | None = None

    def before_update(self) -> list[float | None]:
        """Grad norm per layer (None for layers without gradients); snapshots trainable weights."""
        layers = get_layers(self.model)
        nan = torch.tensor(float("nan"), device=next(self.model.parameters()).device)
        norms: list[torch.Tensor] = []
        snapshot: list[list[torch.Tensor]] = []
        for layer in layers:
            params = [p for p in layer.parameters() if p.requires_grad and p.grad is not None]
            snapshot.append([p.detach().clone() for p in params])
            norms.append(
                _group_norm([p.grad for p in params if p.grad is not None]) if params else nan
            )
        self._before = snapshot
        values = torch.stack(norms).cpu().tolist() if norms else []
        return [None if v != v else float(v) for v in values]

    def collect(
        self,
        grad_norms: list[float | None],
        fwd_ms: list[float | None] | None = None,
        bwd_ms: list[float | None] | None = None,
    ) -> list[LayerStat]:
        layers = get_layers(self.model)
        before = self._before or [[] for _ in layers]
        weights: list[torch.Tensor] = []
        updates: list[torch.Tensor] = []
        trainable: list[bool] = []
        zero = torch.zeros((), device=next(self.model.parameters()).device)
        for idx, layer in enumerate(layers):
            params = list(layer.parameters())
            trainable.append(any(p.requires_grad for p in params))
            weights.append(_group_norm([p.detach() for p in params]))
            old = before[idx] if idx < len(before) else []
            live = [p.detach() for p in params if p.requires_grad and p.grad is not None]
            if old and len(live) == len(old):
                updates.append(_group_norm(torch._foreach_sub(live, old)))
            else:
                updates.append(zero - 1)
        host = torch.stack([torch.stack(weights), torch.stack(updates)]).cpu().tolist()
        self._before = None
        stats = []
        for idx in range(len(layers)):
            w, u = host[0][idx], host[1][idx]
            stats.append(
                LayerStat(
                    id=idx,
                    trainable=trainable[idx],
                    grad_norm=grad_norms[idx] if idx < len(grad_norms) else None,
                    weight_norm=w,
                    update_ratio=(u / w) if u >= 0 and w > 0 else None,
                    fwd_ms=fwd_ms[idx] if fwd_ms and idx < len(fwd_ms) else None,
                    bwd_ms=bwd_ms[idx] if bwd_ms and idx < len(bwd_ms) else None,
                )
            )
        return stats
