"""The shapes the step benchmark runs a plan at: tiny (tests), cpu (a CPU's figures), full (a GPU).

`full` is the plan file as written (GPT-2-small, BERT-Base, SmolLM-135M shapes);
`cpu` keeps each plan's schedule and architecture (depths divided by 3, GQA, SwiGLU,
tied or untied head) at hidden 256, batch 4 × 128, so that a CPU step is dominated by arithmetic
as a GPU's full-size step would be, not by Python; `tiny` is gpu_check's tiny plan.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from gpu_configs import shrunk_plan, tiny_plan

from growcockpit.plan.types import Plan


def cpu_plan(plan: Plan) -> Plan:
    return shrunk_plan(plan, "cpu", 256, seq_len=128, batch_size=4, vocab=8000)


SCALES: dict[str, Callable[[Plan], Plan]] = {
    "tiny": tiny_plan,
    "cpu": cpu_plan,
    "full": copy.deepcopy,
}


def plan_at(plan: Plan, scale: str) -> Plan:
    return SCALES[scale](plan)
