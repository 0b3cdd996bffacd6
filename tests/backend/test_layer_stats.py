"""metrics/layer_stats.py: per-layer gradient, weight and update norms, against torch's own.

The sampler reduces every tensor's norm per layer in a fixed handful of operators
(one fused norm, one segment sum), so its figures must equal the plain per-layer
`vector_norm` of the same tensors, a layer with no gradient must read None, and the
operator count of a sample must not grow with the number of layers.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from growcockpit.metrics import LayerStatsSampler
from growcockpit.metrics.layer_stats import _per_layer_norms


def blocks(n: int) -> nn.ModuleList:
    torch.manual_seed(0)
    return nn.ModuleList(nn.Sequential(nn.Linear(6, 6), nn.LayerNorm(6)) for _ in range(n))


def whole_norm(tensors: list[torch.Tensor]) -> float:
    return float(torch.linalg.vector_norm(torch.cat([t.reshape(-1) for t in tensors])))


def test_grad_weight_and_update_norms_per_layer_match_torch() -> None:
    layers = blocks(3)
    for p in layers[0].parameters():
        p.requires_grad_(False)  # a frozen layer: no gradient, no update
    sampler = LayerStatsSampler(nn.Module(), blocks=layers)
    h = torch.randn(5, 6)
    for layer in layers:
        h = layer(h)
    h.square().sum().backward()
    before = [[p.detach().clone() for p in layer.parameters()] for layer in layers]
    grads = sampler.before_update()
    with torch.no_grad():
        for layer in layers[1:]:
            for p in layer.parameters():
                assert p.grad is not None
                p.sub_(0.1 * p.grad)
    stats = sampler.collect(grads)
    assert grads[0] is None and stats[0].update_ratio is None and not stats[0].trainable
    for i in (1, 2):
        params = list(layers[i].parameters())
        expected = whole_norm([p.grad for p in params if p.grad is not None])
        assert math.isclose(grads[i] or 0.0, expected, rel_tol=1e-5)
        weight = whole_norm([p.detach() for p in params])
        assert math.isclose(stats[i].weight_norm or 0.0, weight, rel_tol=1e-5)
        delta = whole_norm([p.detach() - b for p, b in zip(params, before[i], strict=True)])
        assert math.isclose(stats[i].update_ratio or 0.0, delta / weight, rel_tol=1e-4)


class CountOps(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.count += 1
        return func(*args, **(kwargs or {}))


def test_a_sample_costs_the_same_operators_for_2_or_12_layers() -> None:
    counts = []
    for n in (2, 12):
        tensors = [p.detach() for p in blocks(n).parameters()]
        _per_layer_norms(tensors, [4] * n)  # the layout's index is made once, not per sample
        with CountOps() as ops:
            _per_layer_norms(tensors, [4] * n)
        counts.append(ops.count)
    assert counts[0] == counts[1], counts
