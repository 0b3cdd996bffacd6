"""bench/step_vs_reference.py: the product's step and the reference loop timed side by side,
with operator counts, end to end on a tiny GPT-2 plan (CPU, one process)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import torch
from repo_paths import REPO

sys.path[:0] = [str(REPO / "bench"), str(REPO / "bench" / "gpu")]

from reference.op_count import dispatched_ops, top_differences  # noqa: E402


def test_the_operator_counter_sees_forward_backward_and_names() -> None:
    lin = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)

    def step() -> None:
        lin(x).sum().backward()

    per_step, names = dispatched_ops(step, 2)
    assert names["addmm"] == 2 and names["mm"] >= 2  # forward, and the weight gradient
    assert per_step == sum(names.values()) / 2
    more, _ = dispatched_ops(lambda: (step(), step()), 2)
    assert more == 2 * per_step
    assert top_differences(names, names, (2, 2)) == "none"


def test_the_fastest_chunks_ratio_reads_past_load_that_only_adds_time() -> None:
    from reference.pairs import Timed
    from reference.report import vs, vs_fastest

    product = Timed("full-4", "product", False, lambda: None, 512, chunk_ms=[10.0, 30.0, 12.0])
    reference = Timed("full-4", "reference", False, lambda: None, 512, chunk_ms=[25.0, 9.0, 11.0])
    assert vs_fastest(product, reference) == pytest.approx(0.9)
    assert vs(product, reference) == pytest.approx(0.9166, abs=1e-3)  # per-round: 2.5, 0.3, 0.92
    assert vs_fastest(product, Timed("x", "reference", False, lambda: None, 1)) != vs_fastest(
        product, reference
    )  # no chunks: NaN, never a number


def test_rounds_spread_and_quartiles_say_how_far_a_round_strays() -> None:
    from reference.pairs import Timed
    from reference.report import quartiles, spread

    product = Timed("full-4", "product", False, lambda: None, 512, chunk_ms=[10.0] * 5)
    reference = Timed("full-4", "reference", False, lambda: None, 512)
    reference.chunk_ms = [8.0, 9.0, 10.0, 11.0, 12.0]  # per-round ratios 0.8 ... 1.2
    assert spread(product, reference) == pytest.approx((0.8, 1.2))
    assert quartiles(product, reference) == pytest.approx((0.9, 1.1))


def test_the_metrics_cycle_spans_the_plans_and_the_default_cadence() -> None:
    from step_vs_reference import metrics_cycle

    from growcockpit.plan import load_plan

    plan = load_plan(REPO / "sample_plans" / "gpt2-mslt.toml")
    plan.metrics.every_steps, plan.metrics.timing_every_steps = 20, 50
    plan.metrics.log_every_steps = 1
    assert metrics_cycle(plan) == 100  # 20, 50, and the default 5 and 10: each whole
    plan.metrics.timing_every_steps = 20
    assert metrics_cycle(plan) == 20


@pytest.mark.slow
def test_the_benchmark_prints_every_stage_against_its_reference(
    gc_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import step_vs_reference

    out_json = tmp_path / "svr.json"
    code = step_vs_reference.main(
        [
            "--plans",
            "gpt2",
            "--scale",
            "tiny",
            "--quick",
            "--bare",
            "--device",
            "cpu",
            "--json",
            str(out_json),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    last = out.strip().splitlines()[-1]
    assert re.match(r"step_vs_reference: gpt2 vs_reference=\d+\.\d{3} stages_min=", last), last
    data = json.loads(out_json.read_text())
    rows = data["families"]["gpt2"]["rows"]
    assert [r["config"] for r in rows] == [
        "full-4", "1 shallow-3", "2 grow-6", "3 grow-9", "4 grow-12", "5 all-layers",
    ]  # fmt: skip
    for r in rows:
        assert r["product_ms"] > 0 and r["reference_ms"] > 0
        assert r["product_ops"] > 0 and r["reference_ops"] > 0
        assert len(r["product_chunks_ms"]) == len(r["reference_chunks_ms"]) == 2
        fastest = min(r["reference_chunks_ms"]) / min(r["product_chunks_ms"])
        assert r["vs_reference_fastest"] == pytest.approx(fastest)
    # one trained layer does less work than four: the operator count says so too
    assert rows[1]["reference_ops"] < rows[0]["reference_ops"]
    assert "metrics at the plan's cadence cost" in out
    assert "metrics at the default cadence cost" in out
    family = data["families"]["gpt2"]
    assert family["default_metrics_ms"] > 0 and family["default_metrics_op_cost"] is not None
    assert "default_metrics_cost=" in last
    assert all(r["bare_ms"] > 0 and r["bare_vs_reference"] > 0 for r in rows)
    assert "the gap split" in out
    lo, hi = rows[0]["vs_reference_quartiles"]
    assert lo <= rows[0]["vs_reference"] <= hi
