"""bench/hops_report.py: cost to an accuracy target, the full model's envelope over its
schedules, and a verdict that claims growth only past it by 1.5× on every seed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from repo_paths import REPO

sys.path.insert(0, str(REPO / "bench"))

from hops_report import cost_to, report  # noqa: E402


def curve(*points: tuple[float, float]) -> list[dict[str, Any]]:
    """(flops, accuracy) points; wall time = flops / 1e9 s."""
    return [
        {"step": i, "flops": f, "wall_s": f / 1e9, "accuracy": a, "val_loss": 1.0 - a}
        for i, (f, a) in enumerate(points)
    ]


def test_cost_to_interpolates_and_says_never() -> None:
    evals = curve((1e9, 0.5), (2e9, 0.9), (3e9, 1.0))
    assert cost_to(evals, 0.95, "flops") == pytest.approx(2.5e9)
    assert cost_to(evals, 0.5, "flops") == 1e9
    assert cost_to(curve((1e9, 0.5), (2e9, 0.9)), 0.95, "flops") is None


def write(root: Path, tag: str, evals: list[dict[str, Any]], layers: int = 4) -> None:
    rec = {"tag": tag, "lr": 3e-3, "stages": [[layers, 100]], "evals": evals}
    (root / f"{tag}.json").write_text(json.dumps(rec))


def test_growth_that_only_beats_the_long_schedule_is_not_claimed(tmp_path: Path) -> None:
    for seed in range(3):
        write(tmp_path, f"fixed4-lr3e-3-s{seed}", curve((1e9, 0.5), (8e9, 0.9), (10e9, 1.0)))
        write(tmp_path, f"full@0.5-lr3e-3-s{seed}", curve((1e9, 0.5), (5e9, 1.0)))
        write(tmp_path, f"stack-lr3e-3-s{seed}", curve((1e9, 0.5), (4e9, 1.0)))
    text = report(tmp_path, 0.95)
    assert "stack (lr 3e-3): no growth speedup is claimed: ahead of the full model, but not 1.5×" in text
    for seed in range(3):  # 2.5× sooner than the long run, but not 1.5× before full@0.5
        write(tmp_path, f"stack-lr3e-3-s{seed}", curve((1e9, 0.5), (2e9, 1.0)))
    assert "stack (lr 3e-3): claimed: ≥ 1.5× sooner" in report(tmp_path, 0.95)


def test_a_missing_seed_is_not_a_result(tmp_path: Path) -> None:
    for seed in range(3):
        write(tmp_path, f"fixed4-lr3e-3-s{seed}", curve((1e9, 0.5), (10e9, 1.0)))
    write(tmp_path, "stack-lr3e-3-s0", curve((1e9, 0.5), (2e9, 1.0)))
    assert "stack (lr 3e-3): 1 of 3 seeds run: not a result" in report(tmp_path, 0.95)


def test_growth_behind_the_full_model_says_so(tmp_path: Path) -> None:
    for seed in range(3):
        write(tmp_path, f"fixed4-lr3e-3-s{seed}", curve((1e9, 0.5), (4e9, 1.0)))
        write(tmp_path, f"stack-lr3e-3-s{seed}", curve((1e9, 0.5), (6e9, 1.0)))
    text = report(tmp_path, 0.95)
    assert "reaches 95% with fewer FLOPs on 3 of 3 seeds" in text
