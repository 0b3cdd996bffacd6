"""The gate's size from the probe (bench/gpu/loan_sizing.py): every control priced from the
ms/step measured alone so that all finish in the part's time, the runs sharing the device only
as far as the probe says they fit, two families only when both fit."""

from __future__ import annotations

import sys

from repo_paths import REPO

sys.path[:0] = [str(REPO / "bench" / "gpu"), str(REPO / "bench" / "ttl"), str(REPO / "bench")]

from loan_sizing import Probe, method_seconds, plan_stages, size_gate  # noqa: E402

METHODS = ["baseline", "depth-4", "depth-1", "late", "mslt-longshallow-emb"]
H200ISH = Probe({1: 2.0, 4: 4.5, 8: 8.0}, 20.0, 0.5, 4e9, 140 * 2**30, 16)


def test_ms_per_step_is_measured_or_linear_between_the_measured_depths() -> None:
    assert H200ISH.ms_at(4) == 4.5
    assert H200ISH.ms_at(6) == 6.25
    assert H200ISH.ms_at(1) == 2.0


def test_runs_share_the_device_only_as_far_as_busy_share_and_memory_allow() -> None:
    assert Probe({8: 8.0}, 5.0, 0.3, 1e9, 100e9, 16).lanes() == 3  # 0.9 / 0.3
    assert Probe({8: 8.0}, 5.0, 0.95, 1e9, 100e9, 16).lanes() == 1  # a full device
    assert Probe({8: 8.0}, 5.0, 0.1, 40e9, 100e9, 16).lanes() == 2  # memory: 80 / 40
    assert Probe({8: 8.0}, 5.0, None, None, None, 2).lanes() == 2  # the CPU: a run a core


def test_every_sized_run_finishes_within_the_part() -> None:
    size = size_gate(H200ISH, 200.0, METHODS, "gpu", ("gpt2", "llama"), 300, 6000)
    assert size.budget >= 300 and size.expected_s <= 200.0
    assert size.run_timeout_s <= 200
    for method in METHODS:  # each run alone, slowed by sharing, within its cap
        stages = plan_stages(method, "gpu", "gpt2", size.budget)
        assert method_seconds(stages, H200ISH) + H200ISH.startup_s < size.run_timeout_s
    assert size.steps["depth-1"] > size.steps["depth-4"] > size.steps["baseline"] == size.budget


def test_a_budget_scales_with_the_measured_speed() -> None:
    slow = Probe({k: v * 2 for k, v in H200ISH.ms_by_depth.items()}, 20.0, 0.5, 4e9, 140e9, 16)
    fast = size_gate(H200ISH, 200.0, METHODS, "gpu", ("gpt2",), 300, 6000)
    half = size_gate(slow, 200.0, METHODS, "gpu", ("gpt2",), 300, 6000)
    assert half.budget < fast.budget


def test_one_family_when_two_do_not_fit_and_none_when_one_does_not() -> None:
    both = size_gate(H200ISH, 400.0, METHODS, "gpu", ("gpt2", "llama"), 300, 6000)
    assert both.families == ("gpt2", "llama")
    slow = Probe({1: 20.0, 4: 45.0, 8: 80.0}, 20.0, 0.5, 4e9, 140e9, 16)
    one = size_gate(slow, 400.0, METHODS, "gpu", ("gpt2", "llama"), 300, 6000)
    assert one.families == ("gpt2",) and "1 family" in one.reason
    none = size_gate(slow, 200.0, METHODS, "gpu", ("gpt2", "llama"), 300, 6000)
    assert none.families == () and none.budget == 0 and "does not fit" in none.line()


def test_the_probe_is_read_from_its_records() -> None:
    records = [
        {"kind": "versions", "memory_gib": 80.0},
        {"kind": "startup", "seconds": 12.5},
        {"kind": "ladder", "depth": 1, "ms": 3.0, "busy": 0.2, "peak_bytes": 1e9},
        {"kind": "ladder", "depth": 8, "ms": 9.0, "busy": 0.6, "peak_bytes": 5e9},
    ]
    probe = Probe.from_records(records, 16)
    assert probe is not None and probe.ms_by_depth == {1: 3.0, 8: 9.0}
    assert probe.busy == 0.6 and probe.startup_s == 12.5 and probe.lanes() == 1
    assert Probe.from_records([{"kind": "versions"}], 16) is None  # cut before the ladder
