"""The shapes the step benchmark runs a plan at: tiny (tests), cpu (a CPU's figures), full (a GPU).

`full` is the plan file as written (GPT-2-small, BERT-Base, SmolLM-135M shapes);
`cpu` keeps each plan's schedule and architecture (depths divided by 3, GQA, SwiGLU,
tied or untied head) at hidden 256, batch 4 × 128, so that a CPU step is dominated by arithmetic
as a GPU's full-size step would be, not by Python; `tiny` is gpu_check's tiny plan.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from gpu_configs import tiny_plan

from growcockpit.plan import validate_plan
from growcockpit.plan.types import Plan


def cpu_plan(plan: Plan) -> Plan:
    p = copy.deepcopy(plan)
    m = p.model
    p.name = plan.name + "-cpu"
    ratio = plan.model.intermediate_size / max(1, plan.model.hidden_size)
    m.hidden_size, m.num_heads = 256, 4
    m.intermediate_size = round(ratio * 256 / 16) * 16
    if m.num_kv_heads is not None and m.num_kv_heads < plan.model.num_heads:
        m.num_kv_heads = 2
    m.max_seq_len = 128
    m.final_layers = max(1, plan.model.final_layers // 3)
    p.data.tokenizer = "train:8000"
    p.data.seq_len = 128
    p.optim.batch_size = 4
    for s in p.stages:
        s.layers = max(1, s.layers // 3)
    validate_plan(p, source=p.name)
    return p


SCALES: dict[str, Callable[[Plan], Plan]] = {
    "tiny": tiny_plan,
    "cpu": cpu_plan,
    "full": copy.deepcopy,
}


def plan_at(plan: Plan, scale: str) -> Plan:
    return SCALES[scale](plan)
