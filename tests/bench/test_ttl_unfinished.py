"""A time-to-loss run cut short (killed by --timeout-s, or failed) is no comparison: on an
H200 the first `--scale base` baseline spent its 70 s timeout building the corpus cache,
trained 100 of its 800 steps, and its early loss was reported as the target that growth
'reached 2.07x sooner'."""

from __future__ import annotations

import sys
from typing import Any

from repo_paths import REPO

sys.path[:0] = [
    str(REPO / "bench" / "ttl"),
    str(REPO / "bench"),
]  # the time-to-quality study, common.py

from ttl_report import seed_table  # noqa: E402
from ttl_runs import analyse, completed  # noqa: E402


def _res(losses: list[float], rc: int = 0, status: str = "completed") -> dict[str, Any]:
    evals = [
        {"step": 10 * (i + 1), "wall_s": float(i + 1), "flops": 1e12 * (i + 1), "val_loss": v}
        for i, v in enumerate(losses)
    ]
    return {
        "evals": evals,
        "wall_s": float(len(losses)),
        "flops": 1e12 * len(losses),
        "steps": 10 * len(losses),
        "seed": 0,
        "rc": rc,
        "status": status,
    }


def test_completed_needs_exit_0_and_a_completed_run() -> None:
    assert completed(_res([5.0]))
    assert not completed(_res([5.0], rc=124, status="missing"))
    assert not completed(_res([5.0], rc=0, status="stopped"))
    assert not completed(_res([5.0], rc=1))


def test_a_baseline_cut_short_sets_no_target() -> None:
    run = {"baseline": _res([7.0, 6.7], rc=124, status="missing"), "mslt": _res([6.5, 5.9])}
    analyse(run)
    assert all("speedup_wall" not in r and "final_val_loss" not in r for r in run.values())


def test_a_method_cut_short_gets_no_speedup_and_the_table_says_so() -> None:
    run = {"baseline": _res([7.0, 6.0]), "mslt": _res([6.5, 5.9], rc=124, status="missing")}
    analyse(run)
    assert run["baseline"]["speedup_wall"] == 1.0
    assert "speedup_wall" not in run["mslt"]
    lines = seed_table([run])
    assert any("mslt" in ln and "(unfinished: missing, rc 124)" in ln for ln in lines)
    finished = {"baseline": _res([7.0, 6.0]), "mslt": _res([6.5, 5.9])}
    analyse(finished)
    assert finished["mslt"]["speedup_wall"] and finished["mslt"]["speedup_wall"] > 1.0


def test_startup_says_when_each_first_event_came_after_the_launch() -> None:
    """On a fresh H200 the first baseline spent 65-130 s before its first step and nothing
    said where: each run's line now says when it started, entered stage 1 and first stepped."""
    from ttl_runs import startup, startup_text

    from growcockpit.protocol.events import Checkpoint, RunStarted, StageStarted, Step

    events = [
        RunStarted(t=103.0),
        Checkpoint(t=110.0),
        StageStarted(t=111.5),
        Step(t=140.0),
        Step(t=141.0),
    ]
    marks = startup(events, launched=100.0)
    assert marks == {"started": 3.0, "stage 1": 11.5, "first step event": 40.0}
    assert startup_text(marks) == "started +3 s, stage 1 +12 s, first step event +40 s"
    assert startup_text(startup(events[:1], launched=100.0)) == "started +3 s"
    assert startup_text({}) == "no event"
