"""Validation of `[distributed]`: which strategy a plan asks for, and what it does not combine with.

FSDP support grows recipe by recipe; each pairing it does not handle yet is a row
here with its fix, so a plan fails at `plan validate`, never after the ranks start.
"""

from __future__ import annotations

from collections.abc import Callable

from growcockpit.plan.types import STRATEGIES, Plan, Stage

Problem = tuple[str, str]

_FSDP = 'with strategy = "fsdp"'
# (key, is it set, the one-line fix) for a stage's options FSDP does not run yet
_STAGE_UNSUPPORTED: tuple[tuple[str, Callable[[Stage], bool], str], ...] = (
    (
        "enter",
        lambda s: s.enter == "probe",
        f'"probe" is not supported {_FSDP} yet; pick one operator or use strategy = "ddp"',
    ),
)


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
    for index, stage in enumerate(plan.stages):
        for key, is_set, fix in _STAGE_UNSUPPORTED:
            if is_set(stage):
                problems.append((f"stages[{index}].{key}", fix))
    return problems
