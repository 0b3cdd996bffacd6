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

from hops_report import claims, cost_to, load, report  # noqa: E402


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


def test_the_claim_and_the_1_5x_bar_are_both_reported(tmp_path: Path) -> None:
    gate_controls(tmp_path)
    for seed in range(3):
        write(tmp_path, f"fixed4-lr3e-3-s{seed}", curve((1e9, 0.5), (8e9, 0.9), (10e9, 1.0)))
        write(tmp_path, f"full@0.5-lr3e-3-s{seed}", curve((1e9, 0.5), (5e9, 1.0)))
        write(tmp_path, f"stack-lr3e-3-s{seed}", curve((1e9, 0.5), (4e9, 1.0)))
    text = report(tmp_path, 0.95)
    # ahead of full@0.5 by 1.24× on every seed: the product's claim (p < 0.05), not the 1.5× bar
    assert "stack (lr 3e-3), 3 of 3 seeds: growth reaches 95 % accuracy 1.24× (FLOPs)" in text
    assert "(the 1.5× target on every seed: not met)" in text
    for seed in range(3):  # 2.5× sooner than full@0.5 on every seed
        write(tmp_path, f"stack-lr3e-3-s{seed}", curve((1e9, 0.5), (2e9, 1.0)))
    assert "(the 1.5× target on every seed: met)" in report(tmp_path, 0.95)


def test_beating_only_the_long_baseline_is_not_claimed(tmp_path: Path) -> None:
    """Growth 2× sooner than the long run's curve but behind full@0.5: the product's claim
    names the short schedule and claims nothing, on every surface's words."""
    gate_controls(tmp_path)
    for seed in range(3):
        write(tmp_path, f"fixed4-lr1e-2-s{seed}", curve((1e9, 0.5), (8e9, 0.9), (10e9, 1.0)))
        write(tmp_path, f"full@0.5-lr1e-2-s{seed}", curve((1e9, 0.5), (3e9, 1.0)))
        write(tmp_path, f"stack-lr3e-3-s{seed}", curve((1e9, 0.5), (4.5e9, 1.0)))
    cs = claims(load(tmp_path), 0.95)
    assert [c.claim.status for c in cs] == ["unclaimed"]
    assert cs[0].claim.winner == "full@0.5 (lr 1e-2)"
    text = report(tmp_path, 0.95)
    assert (
        "The full model trained for half the budget (full@0.5 (lr 1e-2)) reaches 95 % accuracy "
        "sooner (FLOPs, seed 0); no growth speedup is claimed"
    ) in text
    assert "| stack | 3e-3 | 3 | 0.67–0.67 (median 0.67) |" in text
    assert "| unclaimed | not met |" in text


def gate_controls(root: Path) -> None:
    """1- and 2-layer controls that never reach the target and end far above the full model."""
    for seed in range(3):
        for layers in (1, 2):
            flat = curve((1e9, 0.5), (10e9, 0.6 + 0.01 * seed))
            write(root, f"fixed{layers}-lr1e-2-s{seed}", flat, layers)


def test_three_seeds_give_the_spread_and_the_p_value(tmp_path: Path) -> None:
    gate_controls(tmp_path)
    ahead = {0: 3.0e9, 1: 2.5e9, 2: 2.0e9}  # 2×, 2.4×, 3× before the full model's 6e9
    for seed, at in ahead.items():
        write(tmp_path, f"fixed4-lr1e-2-s{seed}", curve((1e9, 0.5), (6e9, 0.95), (7e9, 1.0)))
        write(tmp_path, f"stack-lr3e-3-s{seed}", curve((1e9, 0.5), (at, 0.95), (7e9, 1.0)))
    (c,) = claims(load(tmp_path), 0.95)
    assert c.claim.status == "claimed"
    p = c.tests["flops"].p
    assert p is not None and 0 < p < 0.05
    text = report(tmp_path, 0.95)
    assert (
        f"| stack | 3e-3 | 3 | 2.00–3.00 (median 2.40) | 2.00–3.00 (median 2.40) | {p:.3g} |"
        in text
    )
    assert "one-sided paired t-test p = " in text
    assert "Depth gate (final val loss): depth pays" in text
    # one seed: no test, and the product's words for it
    for seed in (1, 2):
        (tmp_path / f"stack-lr3e-3-s{seed}.json").unlink()
    text = report(tmp_path, 0.95)
    assert "| stack | 3e-3 | 1 | 2.00 | 2.00 | - | - | unclaimed |" in text
    assert "one seed: not a result" in text


def test_a_missing_seed_is_not_a_result(tmp_path: Path) -> None:
    gate_controls(tmp_path)
    for seed in range(3):
        write(tmp_path, f"fixed4-lr3e-3-s{seed}", curve((1e9, 0.5), (10e9, 1.0)))
    write(tmp_path, "stack-lr3e-3-s0", curve((1e9, 0.5), (2e9, 1.0)))
    text = report(tmp_path, 0.95)
    assert "stack (lr 3e-3), 1 of 3 seeds: " in text
    assert "one seed: not a result" in text


def test_growth_behind_the_full_model_says_so(tmp_path: Path) -> None:
    for seed in range(3):
        write(tmp_path, f"fixed4-lr3e-3-s{seed}", curve((1e9, 0.5), (4e9, 1.0)))
        write(tmp_path, f"stack-lr3e-3-s{seed}", curve((1e9, 0.5), (6e9, 1.0)))
    text = report(tmp_path, 0.95)
    assert (
        "The full model on the long schedule (baseline (lr 3e-3)) reaches 95 % accuracy sooner"
        in text
    )


def test_extra_full_model_seeds_keep_the_gate_decided(tmp_path: Path) -> None:
    """Seeds 3 and 4 of the full model and one recipe only: the controls' 3 seeds suffice."""
    gate_controls(tmp_path)
    for seed in range(5):
        write(tmp_path, f"fixed4-lr1e-2-s{seed}", curve((1e9, 0.5), (6e9, 0.95), (7e9, 1.0)))
    assert "Depth gate (final val loss): depth pays" in report(tmp_path, 0.95)


def test_flops_only_and_a_gate_from_elsewhere(tmp_path: Path) -> None:
    """A back-to-back folder has no 1-/2-layer runs: its gate comes from the main records;
    runs made at different loads are judged on FLOPs alone (no wall column in the test)."""
    main, wall = tmp_path / "main", tmp_path / "wall"
    main.mkdir()
    wall.mkdir()
    gate_controls(main)
    ahead = {0: 3.0e9, 1: 2.5e9, 2: 2.0e9}
    for seed, at in ahead.items():
        for root in (main, wall):
            write(root, f"fixed4-lr1e-2-s{seed}", curve((1e9, 0.5), (6e9, 0.95), (7e9, 1.0)))
        write(wall, f"stack-lr3e-3-s{seed}", curve((1e9, 0.5), (at, 0.95), (7e9, 1.0)))
    assert "depth gate undecided" in report(wall, 0.95)
    text = report(wall, 0.95, gate_root=main, flops_only=True)
    assert "Depth gate (final val loss): depth pays" in text
    assert "| stack | 3e-3 | 3 | 2.00–3.00 (median 2.40) | - | " in text
    assert "(wall time)" not in text.split("## Verdict")[1]
