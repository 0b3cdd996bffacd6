"""bench/ttl_sweep.py: every method at each peak LR, compared at its own best (pure logic)."""

from __future__ import annotations

import math
import sys
from typing import Any

import pytest
from repo_paths import REPO

sys.path.insert(0, str(REPO / "bench"))

import ttl_sweep  # noqa: E402

from growcockpit.plan import load_plan  # noqa: E402


def test_with_lr_scales_stage_lrs_and_keeps_the_plan_at_its_own_lr() -> None:
    plan = load_plan(REPO / "sample_plans" / "cpu-gpt2-vcycle-long.toml")
    assert plan.optim.lr == pytest.approx(1e-3)
    coarse = [s.lr for s in plan.stages]
    assert ttl_sweep.with_lr(plan, 1e-3) == plan  # reused runs stay equal
    hot = ttl_sweep.with_lr(plan, 3e-3)
    assert hot.optim.lr == pytest.approx(3e-3)
    for before, after in zip(coarse, (s.lr for s in hot.stages), strict=True):
        assert (before is None and after is None) or after == pytest.approx(3 * before)
    assert ttl_sweep.lr_label("plan-x", 1e-3, 0.001) == "plan-x"
    assert ttl_sweep.lr_label("plan-x", 3e-3, 0.001) == "plan-x@lr0.003"


def test_parse_lrs() -> None:
    assert ttl_sweep.parse_lrs("3e-3, 1e-3,1e-3,") == [1e-3, 3e-3]
    for bad, why in (("x", "not a number"), ("2", "not a peak LR"), (",", "no LR")):
        with pytest.raises(ValueError, match=why):
            ttl_sweep.parse_lrs(bad)


def _res(final: float) -> dict[str, Any]:
    return {"evals": [{"step": 10, "val_loss": final}]}


def test_pick_best_takes_the_lowest_median_and_never_a_diverged_lr() -> None:
    V = ttl_sweep.Variant
    variants = [V("baseline", 1e-3, "baseline"), V("baseline", 3e-3, "baseline@lr0.003")]
    variants += [V("grow", 1e-3, "grow"), V("grow", 4e-3, "grow@lr0.004")]
    results = {
        ("baseline", 0): _res(5.2),
        ("baseline", 1): _res(5.1),
        ("baseline", 2): _res(5.3),
        ("baseline@lr0.003", 0): _res(5.0),
        ("baseline@lr0.003", 1): _res(5.4),
        ("baseline@lr0.003", 2): _res(5.05),  # median 5.05 < 5.2
        ("grow", 0): _res(5.1),
        ("grow", 1): _res(5.1),
        ("grow@lr0.004", 0): _res(math.nan),  # diverged: median inf
        ("grow@lr0.004", 1): _res(4.0),
    }
    best, table = ttl_sweep.pick_best(variants, results, [0, 1, 2])
    assert best["baseline"].label == "baseline@lr0.003" and table["baseline"]["best_lr"] == 3e-3
    assert table["baseline"]["lrs"] == {"0.001": 5.2, "0.003": 5.05}
    assert best["grow"].label == "grow"
    assert table["grow"]["lrs"]["0.004"] is None  # median of (inf, 4.0) is inf
    runs = ttl_sweep.runs_at_best(best, results, [0, 1, 2])
    assert runs[0]["baseline"]["lr"] == 3e-3 and runs[0]["baseline"]["evals"][-1]["val_loss"] == 5.0
    assert "grow" not in runs[2]
    lines = ttl_sweep.sweep_table(table)
    assert "lr 0.001" in lines[0] and "5.050*" in lines[2] and "5.100*" in lines[3]
    md = "\n".join(ttl_sweep.sweep_markdown(table, "gpt2"))
    assert "| baseline | 5.200 | **5.050** |" in md and "| grow | **5.100** | - |" in md
