"""The fixed-depth controls of the time-to-loss bench (`depth-<K>`) and the gate table's verdict."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

sys.path[:0] = [str(REPO / "bench" / "ttl"), str(REPO / "bench")]

import ttl_gate_table  # noqa: E402
from common import TTL_SIZES  # noqa: E402
from ttl_gate_table import DepthRow, depth_points, fixed_depth, table, verdict  # noqa: E402
from ttl_plans import Budget, MethodError, budget_plan  # noqa: E402

from growcockpit.plan import estimate_cost  # noqa: E402


def test_depth_k_control_is_the_final_model_at_k_layers_for_the_whole_budget() -> None:
    size = TTL_SIZES["cpu"]["gpt2"]  # 8 layers
    budget = Budget(400, 20)
    unit = estimate_cost(budget_plan("baseline", size, 0, budget)).baseline_step_cost
    steps = {}
    for k in (1, 4):
        plan = budget_plan(f"depth-{k}", size, 0, budget)
        assert plan.model.final_layers == k and len(plan.stages) == 1
        assert plan.stages[0].layers == k and plan.stages[0].train == "all"
        assert plan.optim.schedule == "wsd" and plan.total_steps % 20 == 0
        assert 0.95 < estimate_cost(plan).total / (400 * unit) <= 1.0
        steps[k] = plan.total_steps
    assert 400 < steps[4] < steps[1]  # a shallower model buys more steps
    # depth-1's stage keeps its old name, so its finished runs stay reusable
    assert budget_plan("depth-1", size, 0, budget).stages[0].name == "one-layer"
    for bad in ("depth-8", "depth-0", "depth-12"):
        with pytest.raises(MethodError, match="a control has 1 to 7 layers"):
            budget_plan(bad, size, 0, budget)


def test_fixed_depth_reads_baselines_and_controls_only() -> None:
    size = TTL_SIZES["cpu"]["gpt2"]
    assert fixed_depth("baseline", size) == 8 and fixed_depth("baseline-wsd", size) == 8
    assert fixed_depth("depth-2", size) == 2
    assert fixed_depth("late", size) is None and fixed_depth("depth-x", size) is None


def _rows(full: list[float], half: list[float], one: list[float]) -> list[DepthRow]:
    return [
        DepthRow(layers, 100 * layers, 50.0, 2.0, dict(enumerate(losses)))
        for layers, losses in ((4, full), (2, half), (1, one))
    ]


def test_gate_passes_only_when_ordered_with_the_gap_over_three_spreads_on_three_seeds() -> None:
    passing = _rows([3.00, 3.01, 3.005], [3.10, 3.105, 3.11], [3.30, 3.31, 3.30])
    assert verdict(passing).startswith("PASSES")  # gap 0.10, spread 0.01
    narrow = _rows([3.00, 3.03, 3.015], [3.07, 3.08, 3.075], [3.30, 3.31, 3.30])
    assert verdict(narrow).startswith("fails: ordered")  # gap 0.06 < 3 × 0.03
    shallow_wins = _rows([3.20, 3.21, 3.20], [3.10, 3.11, 3.10], [3.15, 3.16, 3.15])
    assert "a fixed 2-layer model ends lowest" in verdict(shallow_wins)
    one_seed = _rows([3.0], [3.1], [3.3])
    assert "pilot" in verdict(one_seed) and "PASSES" not in verdict(one_seed)
    text = table("p", TTL_SIZES["cpu"]["gpt2"], passing)
    assert "| 4 | 400 | 1.00 | 50 | 2.0 | 0,1,2 | 3.005 (3.000–3.010) |" in text


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_the_gpu_scale_builds_its_gate_plans(family: str) -> None:
    size = TTL_SIZES["gpu"][family]
    assert (size.layers, size.hidden, size.vocab) == (8, 384, 1024)
    budget = Budget(size.steps, size.eval_every)
    for method, layers in (("baseline", 8), ("depth-4", 4), ("depth-1", 1)):
        assert budget_plan(method, size, 0, budget).model.final_layers == layers


def _gate_file(steps: int, loss: dict[int, float]) -> dict[str, object]:
    """A time_to_loss JSON of the cpu scale at `steps`, the full depth and two controls."""
    size = dataclasses.replace(TTL_SIZES["cpu"]["gpt2"], steps=steps)
    per_token = {8: 8.0e6, 4: 4.4e6, 1: 1.7e6}
    tokens = steps * size.batch * size.seq
    runs = {
        name: {
            "seed": 0,
            "stages": [{"steps": round(steps * per_token[8] / per_token[k])}],
            "flops": tokens * per_token[8],
            "final_val_loss": loss[k],
        }
        for name, k in (("baseline", 8), ("depth-4", 4), ("depth-1", 1))
    }
    return {"families": {"gpt2": {"size": dataclasses.asdict(size), "runs": [runs]}}}


def test_the_gate_line_says_why_no_tokens_needed_with_one_budget_and_fits_with_three(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(ttl_gate_table, "train_tokens", lambda size: None)  # no corpus read
    files = []
    for steps, shift in ((400, 0.6), (800, 0.3), (1600, 0.0)):
        path = tmp_path / f"gate-{steps}.json"
        path.write_text(
            json.dumps(
                _gate_file(steps, {8: 4.2 + shift, 4: 4.0 + 0.8 * shift, 1: 3.9 + 0.5 * shift})
            )
        )
        files.append(path)
    assert ttl_gate_table.main([str(files[-1])]) == 0
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("Verdict")][0]
    assert line.startswith("Verdict: fails: a fixed 1-layer model ends lowest")
    assert line.endswith(
        "; tokens needed not estimated: the 8-layer model ran at 1 budget(s); the fit needs "
        "each depth at ≥ 3 budgets, each run to its end"
    )
    points = depth_points([json.loads(f.read_text()) for f in files], "gpt2")
    assert len(points) == 9  # three depths at three budgets, tokens from each run's steps
    assert min(p.tokens for p in points if p.layers == 1) == round(400 * 8.0 / 1.7) * 16 * 128
    assert ttl_gate_table.main([str(files[-1]), "--fit-with", str(files[0]), str(files[1])]) == 0
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("Verdict")][0]
    assert "over 9 runs" in line and "tokens needed not estimated" not in line
