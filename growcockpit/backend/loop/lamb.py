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

    _step_supports_amp_scaling = True  # takes `found_inf` / `grad_scale` like fused AdamW

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        """One update of every parameter with a gradient, as `torch._foreach_*` ops.

        With `self.found_inf` set (a device flag, 1 = skip) the whole update,
        moments and step count included, is masked on the device: no host sync.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        found_inf: torch.Tensor | None = getattr(self, "found_inf", None)
        grad_scale: torch.Tensor | None = getattr(self, "grad_scale", None)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                self._update_group(group, params, found_inf, grad_scale)
        return loss

    def _update_group(
        self,
        group: dict[str, Any],
        params: list[torch.Tensor],
        found_inf: torch.Tensor | None,
        grad_scale: torch.Tensor | None,
    ) -> None:
        beta1, beta2 = group["betas"]
        device = params[0].device
        for p in params:
            state = self.state[p]
            if not state:
                state["step"] = torch.zeros((), dtype=torch.float32)
                state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            if state["step"].device != device:
                state["step"] = state["step"].to(device)
        states = [self.state[p] for p in params]
        steps = [s["step"] for s in states]
        exp_avgs = [s["exp_avg"] for s in states]
        exp_avg_sqs = [s["exp_avg_sq"] for s in states]
        grads = [p.grad for p in params if p.grad is not None]
        if grad_scale is not None:
            grads = list(torch._foreach_div(grads, grad_scale.to(device)))
        keep: torch.Tensor | None = None
        if found_inf is not None:
            keep = (found_inf.to(device) == 0).reshape(())
            grads = [torch.where(keep, g, 0.0) for g in grads]  # a skipped grad may be NaN
            weight = keep.float()
            torch._foreach_add_(steps, [weight] * len(steps))
            torch._foreach_mul_(exp_avgs, 1 - (1 - beta1) * weight)
            torch._foreach_add_(exp_avgs, torch._foreach_mul(grads, (1 - beta1) * weight))
            torch._foreach_mul_(exp_avg_sqs, 1 - (1 - beta2) * weight)
            squares = torch._foreach_mul(grads, grads)
            torch._foreach_add_(exp_avg_sqs, torch._foreach_mul(squares, (1 - beta2) * weight))
        else:
            torch._foreach_add_(steps, 1)
            torch._foreach_mul_(exp_avgs, beta1)
            torch._foreach_add_(exp_avgs, grads, alpha=1 - beta1)
            torch._foreach_mul_(exp_avg_sqs, beta2)
            torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)
        # a skipped first step leaves step = 0: clamp keeps the bias correction finite
        counts = torch._foreach_clamp_min(steps, 1.0)
        bias1 = _one_minus(torch._foreach_pow(beta1, counts))
        bias2 = _one_minus(torch._foreach_pow(beta2, counts))
        m_hat = torch._foreach_div(exp_avgs, bias1)
        v_hat = torch._foreach_div(exp_avg_sqs, bias2)
        torch._foreach_sqrt_(v_hat)
        torch._foreach_add_(v_hat, group["eps"])
        updates = torch._foreach_div(m_hat, v_hat)
        if group["weight_decay"]:
            torch._foreach_add_(updates, params, alpha=group["weight_decay"])
        w_norms = torch.stack(torch._foreach_norm(params))
        u_norms = torch.stack(torch._foreach_norm(updates))
        trust = torch.where(
            (w_norms > 0) & (u_norms > 0),
            (w_norms / u_norms).clamp(max=group["max_trust"]),
            torch.ones_like(w_norms),
        )
        if keep is not None:
            trust = trust * keep
        torch._foreach_mul_(updates, list(trust.unbind()))
        torch._foreach_add_(params, updates, alpha=-group["lr"])


def _one_minus(values: list[torch.Tensor] | tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    out = list(values)
    torch._foreach_neg_(out)
    torch._foreach_add_(out, 1.0)
    return out
