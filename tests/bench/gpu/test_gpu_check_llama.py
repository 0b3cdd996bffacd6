"""bench/gpu/gpu_check.py on the Llama plan: FLOPs priced as Llama's block is built (SwiGLU's three
FFN matrices, GQA's narrower K/V, the untied head's weight gradient), stages built as the
engine builds them (middle stacking, zero init), and `--tiny --plans llama` end to end."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest
from gpu_check_fixtures import run_tiny_gpu_check
from repo_paths import REPO

sys.path[:0] = [str(REPO / "bench" / "gpu"), str(REPO / "bench")]

from gpu_configs import full_depth_baseline, tiny_plan  # noqa: E402

from growcockpit.plan import load_plan  # noqa: E402
from growcockpit.plan.flops import stage_step_flops  # noqa: E402
from growcockpit.plan.types import Plan  # noqa: E402

LLAMA = REPO / "sample_plans" / "llama-smollm-135m.toml"
LLAMA_STAGES = ["base-10", "middle-20", "middle-30", "all-layers"]


def _tiny() -> Plan:
    return tiny_plan(load_plan(LLAMA))


def _by_hand(plan: Plan, swiglu: bool = True, gqa: bool = True) -> tuple[float, float]:
    """Per-token forward FLOPs of one block and of the head, counted matrix by matrix."""
    m = plan.model
    d = m.hidden_size
    kv_width = d * m.kv_heads // m.num_heads if gqa else d  # K and V: kv heads × head dim
    matmuls = d * d + d * kv_width + d * kv_width + d * d  # Q, K, V, O
    matmuls += (3 if swiglu else 2) * d * m.intermediate_size  # gate, up, down
    block = 2 * matmuls  # the 6N convention of the one count (plan/flops.py): no attention term
    head = 2 * d * int(plan.data.tokenizer.split(":")[1])  # untied: its own V × d weight
    return float(block), float(head)


def _flops(plan: Plan, index: int) -> float:
    return stage_step_flops(plan)[index]


def test_the_tiny_llama_plan_keeps_grouped_queries_swiglu_and_the_schedule() -> None:
    plan = _tiny()
    m = plan.model
    assert (m.hidden_size, m.num_heads, m.kv_heads, m.intermediate_size) == (64, 4, 2, 176)
    assert m.num_heads % m.kv_heads == 0 and m.tie_embeddings is False
    assert [(s.name, s.layers) for s in plan.stages] == list(
        zip(LLAMA_STAGES, [3, 6, 10, 10], strict=True)
    )
    assert [(s.source, s.init) for s in plan.stages[1:3]] == [("middle", "zero")] * 2
    base = full_depth_baseline(plan)
    assert [(s.name, s.layers, s.train, s.steps) for s in base.stages] == [
        ("full-10", 10, "all", plan.total_steps)
    ]
    assert (base.model, base.data, base.optim) == (plan.model, plan.data, plan.optim)


def test_llama_flops_per_step_count_swiglu_gqa_and_the_untied_head() -> None:
    plan = _tiny()
    tokens = plan.data.seq_len * plan.optim.batch_size
    f, h = _by_hand(plan)
    # every Llama stage trains the embeddings: frozen blocks pass the gradient down (fwd +
    # input gradient = 2 forwards), trained ones 3, and the untied head trains (3)
    expected = [
        tokens * (3 * 3 * f + 3 * h),  # base-10 (3 layers), all trained
        tokens * (3 * 3 * f + 3 * 2 * f + 3 * h),  # middle-20: 6 layers, copies 3-5 train
        tokens * (4 * 3 * f + 6 * 2 * f + 3 * h),  # middle-30: 10 layers, copies 5-8 train
        tokens * (10 * 3 * f + 3 * h),  # all-layers
    ]
    assert [_flops(plan, i) for i in range(4)] == pytest.approx(expected, rel=1e-12)
    assert _flops(full_depth_baseline(plan), 0) == pytest.approx(expected[3], rel=1e-12)
    # priced as a BERT block (two FFN matrices, full-width K/V) it would be another number
    for swiglu, gqa in ((False, True), (True, False)):
        f_wrong, _ = _by_hand(plan, swiglu, gqa)
        assert tokens * (10 * 3 * f_wrong + 3 * h) != pytest.approx(expected[3], rel=1e-6)


def test_frozen_blocks_above_a_middle_stack_pay_their_input_gradient() -> None:
    """Embeddings frozen: blocks below the trained copies run forward only, the one above
    them must pass the gradient down (2 forwards), the lowest trained block needs no input
    gradient (2, not 3); a frozen untied head with trained embeddings costs fwd + input grad."""
    plan = _tiny()
    tokens = plan.data.seq_len * plan.optim.batch_size
    f, h = _by_hand(plan)
    frozen_emb = replace(
        plan,
        stages=[*plan.stages[:2], replace(plan.stages[2], embeddings="frozen"), plan.stages[3]],
    )
    # depth 10, copies 5-8 train: 0-4 forward only, 9 fwd + input gradient
    expected = tokens * (5 * f + 1 * 2 * f + (4 * 3 - 1) * f + 3 * h)
    assert _flops(frozen_emb, 2) == pytest.approx(expected, rel=1e-12)
    frozen_head = replace(plan, stages=[*plan.stages[:3], replace(plan.stages[3], head="frozen")])
    assert _flops(frozen_head, 3) == pytest.approx(tokens * (30 * f + 2 * h), rel=1e-12)


@pytest.mark.usefixtures("gc_cache")
def test_llama_stages_are_built_as_the_engine_builds_them() -> None:
    """Middle stacking copies the middle blocks in after themselves, `init = "zero"` makes
    each copy an identity (the grown model computes what the smaller one did), and the
    copies are what trains."""
    import torch
    from gpu_configs import build_configs, device_batches

    from growcockpit.backend.data.blocks import load_blocks

    torch.set_num_threads(1)
    plan = _tiny()
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    cpu = torch.device("cpu")
    configs = build_configs("llama", plan, data, cpu)
    assert [(c.depth, c.trainable) for c in configs] == [
        (3, [0, 1, 2]),
        (6, [3, 4, 5]),
        (10, [5, 6, 7, 8]),
        (10, list(range(10))),
    ]
    six, ten = (cast(Any, c.model).model.layers for c in configs[1:3])
    for new, source in zip(range(5, 9), range(1, 5), strict=True):
        assert torch.equal(ten[new].self_attn.q_proj.weight, six[source].self_attn.q_proj.weight)
        assert (
            not ten[new].mlp.down_proj.weight.any() and not ten[new].self_attn.o_proj.weight.any()
        )
    assert torch.equal(ten[9].self_attn.q_proj.weight, six[5].self_attn.q_proj.weight)
    batch = device_batches(data, 1, 4, cpu)[0]
    with torch.no_grad():
        before, after = (c.forward.loss(c.model, batch) for c in configs[1:3])
    assert torch.allclose(before, after, atol=1e-5)


@pytest.mark.slow
def test_tiny_llama_only_times_every_stage_and_its_full_depth_baseline(
    gc_cache: Path, tmp_path: Path
) -> None:
    args = ["--plans", "llama", "--steps", "2", "--batch-size", "4", "--budget-s", "60"]
    proc, out_json = run_tiny_gpu_check(gc_cache, tmp_path, args, timeout=180)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Traceback" not in out and "mslt/" not in proc.stdout, out
    last = proc.stdout.strip().splitlines()[-1]
    assert re.match(
        r"gpu_check: llama: stage3_speedup=\d+\.\d\dx \(model \d+\.\d\dx\) "
        r"schedule_speedup=\d+\.\d\dx \(model \d+\.\d\dx\) .*roofline_ratio=.*device=CPU",
        last,
    ), out
    # a speed row, a roofline row and a breakdown row per configuration, baseline first
    for name in [
        "llama-base/1 full-10",
        *(f"llama/{i + 1} {n}" for i, n in enumerate(LLAMA_STAGES)),
    ]:
        assert sum(line.startswith(name + " ") for line in proc.stdout.splitlines()) == 3, name
    result = json.loads(out_json.read_text())
    assert result["families"] == ["llama"] and "rows" not in result  # no BERT section
    rows = result["llama"]["rows"]
    assert [r["name"] for r in rows] == ["full-10", *LLAMA_STAGES]
    assert [r["depth"] for r in rows] == [10, 3, 6, 10, 10]
    plan = replace(_tiny(), optim=replace(_tiny().optim, batch_size=4))
    assert [r["flops_per_step"] for r in rows[1:]] == pytest.approx(
        [_flops(plan, i) for i in range(4)]
    )
    for r in rows:
        assert r["timed_steps"] == 2 and r["step_ms"] > 0 and r["tokens_per_s"] > 0
        assert r["bound_ms"] > 0 and r["measured_over_bound"] > 0
        assert r["fwd_ms"] > 0 and r["bwd_ms"] > 0 and r["opt_ms"] > 0
        assert r["gpu_busy_share"] is None and r["extra_mem_bytes"] is None  # CPU: n/a
    assert rows[0]["measured_speedup"] == 1.0 and rows[1]["model_speedup"] > 1
    assert result["llama"]["schedule"]["model_speedup"] > 1
