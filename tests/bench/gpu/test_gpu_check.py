"""bench/gpu/gpu_check.py --tiny runs end to end on the CPU and prints its table and summary."""

from __future__ import annotations

import contextlib
import json
import math
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from gpu_check_fixtures import run_tiny_gpu_check
from repo_paths import REPO

MSLT_STAGES = ["shallow-3", "grow-6", "grow-9", "grow-12", "all-layers"]


@pytest.mark.slow
def test_gpu_check_tiny_runs_on_cpu(gc_cache: Path, tmp_path: Path) -> None:
    args = ["--steps", "2", "--batch-size", "4", "--budget-s", "50"]
    proc, out_json = run_tiny_gpu_check(gc_cache, tmp_path, args, timeout=120)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output

    lines = proc.stdout.splitlines()
    assert re.match(
        r"gpu_check: stage4_speedup=\d+\.\d\dx \(model \d+\.\d\dx\) schedule_speedup=\d+\.\d\dx .*device=CPU",
        lines[-1],
    ), output
    # one table row per stage config: the baseline, then each MSLT stage in order
    rows = [line for line in lines if re.match(r"(baseline|mslt)/\d+ \S+\s+\d+\s", line)]
    names = [row.split()[1] for row in rows]
    assert names[: 1 + len(MSLT_STAGES)] == ["full-12", *MSLT_STAGES], output
    assert "no GPU in use: running on CPU" in output
    assert "GPU util: n/a" in output

    result = json.loads(out_json.read_text())
    assert [r["name"] for r in result["rows"]] == ["full-12", *MSLT_STAGES]
    grow12 = result["rows"][4]
    assert (grow12["depth"], grow12["trainable_layers"], grow12["embeddings_trainable"]) == (
        4,
        [3],
        False,
    )
    assert grow12["frozen_prefix"] == 3  # the bottom 3 layers run forward-only
    assert all(r["timed_steps"] == 2 and r["step_ms"] > 0 for r in result["rows"])
    assert result["r_h"]["r"] > 0 and result["schedule"]["model_speedup"] > 1


# ---- the parts of the check, in process -------------------------------------------------
def _bench_import() -> None:
    for path in (REPO / "bench", REPO / "bench" / "gpu"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))


@pytest.mark.usefixtures("gc_cache")
def test_the_timed_step_is_the_engines_picked_positions_and_guarded_update() -> None:
    import torch

    _bench_import()
    from gpu_configs import build_configs, device_batches, make_step, tiny_plan, update

    from growcockpit.backend.data.blocks import load_blocks
    from growcockpit.plan import load_plan

    plan = tiny_plan(load_plan(REPO / "sample_plans" / "mslt-bert-base.toml"))
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    cpu = torch.device("cpu")
    batches = device_batches(data, 2, 4, cpu)
    assert all(b.picked is not None for b in batches)  # BERT: the masked rows, found on the host
    cfg = build_configs("mslt", plan, data, cpu)[3]  # grow-12: 3 frozen blocks under 1 trained
    seen = []
    real_loss = cfg.forward.loss

    def spy(model: torch.nn.Module, batch: Any) -> torch.Tensor:
        seen.append(batch.picked)
        return real_loss(model, batch)

    cfg.forward.loss = spy  # type: ignore[method-assign]
    before = [p.detach().clone() for p in cfg.params]
    make_step(cfg, batches, contextlib.nullcontext, 1.0)()
    assert seen and seen[0] is batches[0].picked
    assert any(not torch.equal(a, p) for a, p in zip(before, cfg.params, strict=True))
    # a non-finite loss is skipped as the engine skips it: no weight moves
    loss = real_loss(cfg.model, batches[1])
    loss.backward()
    after = [p.detach().clone() for p in cfg.params]
    update(cfg, loss * float("nan"), 1.0)
    assert all(torch.equal(a, p) for a, p in zip(after, cfg.params, strict=True))


def test_roofline_prices_the_frozen_tied_head_as_forward_and_input_gradient() -> None:
    import torch

    _bench_import()
    from common import baseline_step_flops as full_step_flops
    from common import stage_step_flops
    from gpu_configs import tiny_plan
    from gpu_roofline import Peak, measure_peak, roofline_ms

    from growcockpit.plan import load_plan

    plan = tiny_plan(load_plan(REPO / "sample_plans" / "mslt-bert-base.toml"))
    assert stage_step_flops(plan)[3] < full_step_flops(plan)  # a frozen bottom costs less
    frozen_head = replace(plan.stages[3], embeddings="frozen")
    trained_head = replace(plan.stages[3], embeddings="train")
    one = [replace(plan, stages=[*plan.stages[:3], s]) for s in (frozen_head, trained_head)]
    frozen, trained = (stage_step_flops(p)[3] for p in one)
    assert frozen < trained  # the tied decoder's weight gradient is not computed when frozen
    peak = Peak(tflops=100.0, dtype="bf16", size=8192, gbps=1000.0, seconds=0.0)
    bound = roofline_ms(1e12, 1e9, peak)
    assert bound == {"compute_ms": 10.0, "memory_ms": 1.0, "bound_ms": 10.0}
    cpu = measure_peak(torch.device("cpu"), budget_s=0.5, size=128)
    assert cpu.dtype == "fp32" and cpu.tflops > 0 and cpu.gbps > 0 and math.isfinite(cpu.tflops)


def test_host_overhead_compares_wall_clock_between_step_events_with_in_step_rate() -> None:
    _bench_import()
    from gpu_engine import host_overhead

    from growcockpit.protocol.events import Step

    steps = [Step(step=s, tokens=s * 1000, tokens_per_s=11_000.0) for s in (10, 20, 30)]
    wall, inner = host_overhead(steps, [0.0, 1.0, 2.0])  # type: ignore[misc]
    assert (wall, inner) == (10_000.0, 11_000.0)  # 1 - 10/11 ≈ 9 % of the time outside steps
    assert host_overhead(steps[:1], [0.0]) is None


def test_without_cuda_the_full_check_refuses_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    _bench_import()
    import gpu_check

    assert gpu_check.main([]) == gpu_check.NO_CUDA_EXIT == 3
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "CUDA is not available" in out[0] and "--allow-cpu" in out[0]
