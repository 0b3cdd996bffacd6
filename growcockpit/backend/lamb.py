"""LAMB (You et al., 2019): Adam with a per-tensor trust ratio, for large-batch BERT.

torch ships no LAMB. This follows the paper's algorithm 2 with AdamW-style
decoupled weight decay folded into the update before the trust ratio; the
trust ratio is ||w|| / ||update|| (1 when either norm is zero).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch


class Lamb(torch.optim.Optimizer):
    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        max_trust: float = 10.0,
    ) -> None:
        if lr <= 0:
            raise ValueError(f"LAMB needs lr > 0, got {lr}")
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "max_trust": max_trust,
        }
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = torch.zeros((), dtype=torch.float32)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                step = float(state["step"])
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                grad = p.grad
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                m_hat = exp_avg / (1 - beta1**step)
                v_hat = exp_avg_sq / (1 - beta2**step)
                update = m_hat / (v_hat.sqrt() + group["eps"])
                if group["weight_decay"]:
                    update = update.add(p, alpha=group["weight_decay"])
                w_norm = torch.linalg.vector_norm(p)
                u_norm = torch.linalg.vector_norm(update)
                trust = torch.where(
                    (w_norm > 0) & (u_norm > 0),
                    (w_norm / u_norm).clamp(max=group["max_trust"]),
                    torch.ones_like(w_norm),
                )
                p.add_(update * trust, alpha=-group["lr"])
        return loss
