"""A calibration a busy machine measured is flagged, not printed as fact.
The check is pure logic over the measured numbers (no timing here)."""

from __future__ import annotations

import math

from growcockpit.backend.calibrate import implausible, loaded_warning

QUIET = {"r": 2.1, "h": 1.4, "spread": 1.2}


def test_a_quiet_machines_calibration_is_plausible() -> None:
    assert implausible(QUIET) == []


def test_backward_cheaper_than_forward_is_flagged() -> None:
    for r in (0.0, 0.4, 0.99, math.nan):
        (problem,) = implausible({**QUIET, "r": r})
        assert "backward cheaper than forward" in problem
    assert implausible({**QUIET, "r": 1.0}) == []


def test_negative_head_and_noisy_repeats_are_flagged() -> None:
    assert "head cost" in implausible({**QUIET, "h": -0.2})[0]
    assert "differ up to 4.0x" in implausible({**QUIET, "spread": 4.0})[0]
    assert implausible({**QUIET, "spread": 2.5}) == []


def test_the_warning_says_the_machine_looks_loaded() -> None:
    text = loaded_warning(implausible({**QUIET, "r": 0.0}), 7.9, 2)
    assert text.startswith("warning: this calibration is not plausible: backward cheaper")
    assert "The machine looks loaded (load average 7.9 on 2 CPUs)" in text
    assert "leave out --calibrate" in text
    assert "load average" not in loaded_warning(["x"], None, None)


def test_plan_show_prints_the_warning(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from repo_paths import TINY_TOML

    import growcockpit.backend.calibrate as calibrate
    from growcockpit.cli import main

    busy = {
        "block_fwd_ms": 1.0,
        "block_fwd_bwd_ms": 1.0,
        "block_fwd_nograd_ms": 1.0,
        "head_fwd_ms": 1.0,
        "r": 0.0,
        "h": 1.0,
        "nograd_over_grad_fwd": 1.0,
        "block_fwd_frozen_ms": 1.0,
        "frozen_over_grad_fwd": 1.0,
        "spread": 1.1,
    }
    monkeypatch.setattr(calibrate, "calibrate_plan", lambda plan: busy)
    assert main(["plan", "show", str(TINY_TOML), "--calibrate"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("calibrated on this machine: r = 0.00")
    assert out[1].startswith("warning: this calibration is not plausible: backward cheaper")
    assert "The machine looks loaded" in out[2]
