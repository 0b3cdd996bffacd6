"""Validation of `[distributed]`: which strategy a plan asks for, and what it does not combine with.

Every growth operator and recipe runs under FSDP (backend/parallel/fsdp_grow.py); what does not is
refused here with its fix, so a plan fails at `plan validate`, never after the ranks start.
"""

from __future__ import annotations

from growcockpit.plan.types import STRATEGIES, Plan

Problem = tuple[str, str]

_FSDP = 'with strategy = "fsdp"'


def distributed_problems(plan: Plan) -> list[Problem]:
    d = plan.distributed
    if d.strategy not in STRATEGIES:
        choices = ", ".join(f'"{s}"' for s in STRATEGIES)
        return [("distributed.strategy", f"unknown strategy {d.strategy!r}; use one of {choices}")]
    if d.strategy == "ddp":
        if d.cpu_offload:
            fix = 'set strategy = "fsdp" or remove cpu_offload'
            return [
                (
                    "distributed.cpu_offload",
                    f'needs strategy = "fsdp" (DDP keeps the whole model on each device); {fix}',
                )
            ]
        return []
    problems: list[Problem] = []
    o = plan.optim
    if o.precision == "fp16":
        problems.append(
            ("optim.precision", f'"fp16" is not supported {_FSDP}; use "bf16", "fp32" or "auto"')
        )
    if o.compile:
        problems.append(
            ("optim.compile", f"compile is not supported {_FSDP} yet; set compile = false")
        )
    return problems
