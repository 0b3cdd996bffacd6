"""The loan's first check: one engine step per family on the device against the same step on
the CPU, and, where they disagree, the first operator that does.

A GPU loan is short; a wrong CUDA kernel, a bf16 path that diverges or a family whose fast
block forward breaks on the device would make every later figure meaningless. So before
anything expensive runs, each family trains one `Trainer.train_step` at tiny shapes (fast
block forwards on, the product's own step) on the device in fp32 and in bf16 autocast, and
the same step on the CPU in fp32, from the same weights and the same batch. The loss and the
gradient norm must agree to a tolerance (fp32: TF32 matmuls allowed; bf16: its 8-bit
mantissa). Where they do not, `first_divergent_module` runs one plain Hugging Face forward
on both and names the first module (in execution order) whose output differs, so the one
line that stops the loan names the family and the operator.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.data.blocks import TokenBlocks, load_blocks
from growcockpit.backend.loop.engine import Trainer
from growcockpit.plan.types import Plan

# relative tolerances on the loss and the gradient norm of one step, against the CPU's fp32
TOLERANCE = {"fp32": 5e-3, "bf16": 5e-2}
FAMILIES = ("gpt2", "bert", "llama")


@dataclass(frozen=True)
class StepCheck:
    """One family at one precision on the device against the CPU's fp32 step."""

    family: str
    precision: str
    device: str
    loss: float
    cpu_loss: float
    grad_norm: float
    cpu_grad_norm: float
    operator: str | None = None  # the first divergent module, where the step disagrees

    @property
    def loss_error(self) -> float:
        return _rel(self.loss, self.cpu_loss)

    @property
    def grad_error(self) -> float:
        return _rel(self.grad_norm, self.cpu_grad_norm)

    @property
    def ok(self) -> bool:
        tol = TOLERANCE[self.precision]
        return self.loss_error <= tol and self.grad_error <= tol

    def line(self) -> str:
        verdict = "ok" if self.ok else f"MISMATCH at {self.operator or 'the step'}"
        return (
            f"probe: {self.family:<5} {self.precision} on {self.device}: loss {self.loss:.5f} "
            f"(cpu {self.cpu_loss:.5f}, rel {self.loss_error:.1e}), grad norm "
            f"{self.grad_norm:.4f} (cpu {self.cpu_grad_norm:.4f}, rel {self.grad_error:.1e}), "
            f"tol {TOLERANCE[self.precision]:.0e}: {verdict}"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": "step_check",
            "family": self.family,
            "precision": self.precision,
            "device": self.device,
            "loss": self.loss,
            "cpu_loss": self.cpu_loss,
            "grad_norm": self.grad_norm,
            "cpu_grad_norm": self.cpu_grad_norm,
            "loss_rel_error": self.loss_error,
            "grad_rel_error": self.grad_error,
            "ok": self.ok,
            "operator": self.operator,
        }


def _rel(a: float, b: float) -> float:
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / max(abs(b), 1e-12)


def probe_plan(family: str, precision: str) -> Plan:
    """The time-to-loss bench's quick scale of `family` (4 × 64, vocab 2000), one stage, no
    dropout (the CPU's and the GPU's random streams differ), at `precision`."""
    from common import TTL_SIZES, baseline_stages, plan_for

    size = TTL_SIZES["quick"][family]
    plan = plan_for(size, f"probe-{family}", baseline_stages(size))
    plan.model.dropout = 0.0
    plan.optim.precision = precision  # type: ignore[assignment]
    plan.metrics.eval_every_steps = 0
    return plan


def one_step(plan: Plan, data: TokenBlocks, device: torch.device) -> tuple[float, float, nn.Module]:
    """(loss, grad norm, the model) of the engine's first reported step on `device`."""
    with tempfile.TemporaryDirectory(prefix="gpu-probe-") as tmp:
        torch.manual_seed(plan.seed)
        trainer = Trainer(plan, Path(tmp), data, RunReporter(lambda _e: None), device)
        try:
            trainer.enter_stage()
            outcome = trainer.train_step(report=True)
        finally:
            trainer.prefetch.close()
    if outcome is None:
        raise RuntimeError("the step reported nothing")
    return outcome.loss, outcome.grad_norm, trainer.model


def check_family(family: str, device: torch.device, precisions: tuple[str, ...]) -> list[StepCheck]:
    """The family's step on `device` at each precision against one CPU fp32 step."""
    plan = probe_plan(family, "fp32")
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    cpu_loss, cpu_grad, cpu_model = one_step(plan, data, torch.device("cpu"))
    out = []
    for precision in precisions:
        loss, grad, model = one_step(probe_plan(family, precision), data, device)
        check = StepCheck(family, precision, device.type, loss, cpu_loss, grad, cpu_grad)
        if not check.ok:
            config: Any = cpu_model.config
            vocab = int(config.vocab_size)
            ids = torch.randint(0, vocab, (2, 16))
            where = first_divergent_module(cpu_model, model, ids, device, precision)
            check = StepCheck(family, precision, device.type, loss, cpu_loss, grad, cpu_grad, where)
        out.append(check)
    return out


def first_divergent_module(
    reference: nn.Module,
    candidate: nn.Module,
    input_ids: torch.Tensor,
    device: torch.device,
    precision: str,
    model_device: torch.device | None = None,
) -> str:
    """The first module, in the order the forward runs them, whose output on `device` differs
    from the CPU reference's beyond the precision's tolerance: `name (ClassName)`; "none
    (the modules agree: the fast block forward or the optimizer step)" when every one agrees.
    Both models get the reference's weights first, so only the arithmetic differs."""
    candidate.load_state_dict({k: v.to(device) for k, v in reference.state_dict().items()})
    seen: dict[str, list[tuple[str, torch.Tensor]]] = {"ref": [], "cand": []}

    def hooks(model: nn.Module, key: str) -> list[Any]:
        handles = []
        for name, module in model.named_modules():
            if not name:
                continue

            def hook(mod: nn.Module, _in: Any, out: Any, _name: str = name) -> None:
                tensor = out[0] if isinstance(out, tuple) else out
                if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
                    label = f"{_name} ({type(mod).__name__})"
                    seen[key].append((label, tensor.detach().float().cpu()))

            handles.append(module.register_forward_hook(hook))
        return handles

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    handles = hooks(reference, "ref") + hooks(candidate, "cand")
    try:
        with torch.no_grad():
            reference.eval()
            candidate.eval()
            reference(input_ids=input_ids)
            if dtype is not None:
                with torch.autocast(device.type, dtype=dtype):
                    candidate(input_ids=input_ids.to(device))
            else:
                candidate(input_ids=input_ids.to(device))
    finally:
        for h in handles:
            h.remove()
    tol = TOLERANCE.get(precision, TOLERANCE["fp32"])
    for (label, ref), (_label, cand) in zip(seen["ref"], seen["cand"], strict=False):
        if ref.shape != cand.shape:
            return f"{label}: shape {tuple(cand.shape)} vs {tuple(ref.shape)}"
        scale = ref.abs().max().item() or 1.0
        err = (ref - cand).abs().max().item() / scale
        if not math.isfinite(err) or err > tol:
            return f"{label}: max rel error {err:.1e}"
    return "none (the modules agree: the fast block forward or the optimizer step)"
