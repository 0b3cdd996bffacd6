"""The loan's verdict and summary: a gate is undecided unless every requested control finished,
and then every growth speedup of the loan's line reads unclaimed; a cap reads "cut at", never
FAILED (bench/gpu/loan_verdict.py, loan_summary.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from repo_paths import REPO

sys.path[:0] = [str(REPO / "bench" / "gpu"), str(REPO / "bench" / "ttl"), str(REPO / "bench")]

from loan_summary import gate_pays, mark_unclaimed, part_item, summary_line  # noqa: E402
from loan_verdict import family_verdict  # noqa: E402

METHODS = ["baseline", "depth-2", "depth-1", "late"]


def run(final: float | None, status: str = "completed", rc: int = 0) -> dict[str, Any]:
    res: dict[str, Any] = {"status": status, "rc": rc, "evals": []}
    if final is not None:
        res["final_val_loss"] = final
    return res


def family(**runs: dict[str, Any]) -> dict[str, Any]:
    """One seed's runs, the full-depth short schedules finished unless given."""
    short = {"full@0.5": run(3.4), "full@0.25": run(3.8)}
    named = {k.replace("_", "-").replace("full-0-", "full@0."): v for k, v in runs.items()}
    return {"size": {"layers": 4}, "runs": [short | named]}


def test_every_control_finished_the_gate_decides() -> None:
    fam = family(baseline=run(3.0), depth_2=run(3.3), depth_1=run(3.6), late=run(3.1))
    v = family_verdict(fam, METHODS)
    assert v.word == "pays" and v.best_depth == 4 and v.why == ""
    fam = family(baseline=run(3.5), depth_2=run(3.3), depth_1=run(3.6), late=run(3.1))
    assert family_verdict(fam, METHODS).word == "does_not_pay"


def test_a_killed_control_leaves_the_gate_undecided_even_where_the_rest_would_pay() -> None:
    killed = run(None, status="missing", rc=-9)  # SIGKILL mid-run: no final loss
    fam = family(baseline=run(3.0), depth_2=run(3.3), depth_1=killed, late=run(3.1))
    v = family_verdict(fam, METHODS)
    assert v.word == "undecided" and "depth-1" in v.why and v.best_depth is None
    absent = family(baseline=run(3.0), depth_2=run(3.3), late=run(3.1))  # never reported
    assert family_verdict(absent, METHODS).word == "undecided"
    assert family_verdict(None, METHODS).why == "no result"
    short_cut = family(
        baseline=run(3.0), depth_2=run(3.3), depth_1=run(3.6), full_0_5=run(None, "missing", -9)
    )
    v = family_verdict(short_cut, METHODS)
    assert v.word == "undecided" and v.why == "full@0.5 not finished"
    left_out = family(baseline=run(3.0), depth_2=run(3.3), depth_1=run(3.6))
    del left_out["runs"][0]["full@0.25"]  # never reported (a --reuse-only report of a cut)
    assert family_verdict(left_out, METHODS).why == "full@0.25 not finished"
    assert family_verdict({"size": {"layers": 4}, "runs": []}, METHODS).word == "undecided"


def test_an_undecided_or_missing_gate_marks_every_speedup_of_the_line_unclaimed() -> None:
    stages = "stages: stage4_speedup=1.31 schedule_speedup=1.20 roofline_ratio=0.4"
    gate = "gate: budget=90 gpt2.depth_gate=undecided(depth-1 not finished) gpt2.late_speedup=1.4"
    line = summary_line(100.0, 420.0, [gate, stages])
    assert "stage4_speedup=unclaimed(1.31)" in line and "schedule_speedup=unclaimed(1.20)" in line
    assert "gpt2.late_speedup=unclaimed(1.4)" in line and "roofline_ratio=0.4" in line
    missing = summary_line(100.0, 420.0, ["gate cut at 9 s: undecided (…)", stages])
    assert "stage4_speedup=unclaimed(1.31)" in missing
    pays = "gate: budget=90 gpt2.depth_gate=pays gpt2.best_fixed_depth=4 gpt2.late_speedup=1.4"
    assert gate_pays([pays]) and "stage4_speedup=1.31" in summary_line(1.0, 2.0, [pays, stages])
    mixed = pays + " ; llama.depth_gate=does_not_pay"
    assert not gate_pays([mixed])
    assert mark_unclaimed("a_speedup=unclaimed(2.0)") == "a_speedup=unclaimed(2.0)"  # once


def test_a_cut_part_says_cut_at_and_keeps_what_it_printed(tmp_path: Path) -> None:
    lines = ["noise", "gpu_check: stage4_speedup=1.3 roofline_ratio=0.5"]
    item = part_item("stages", "cut", None, lines, 61.4, tmp_path)
    assert item == "stages cut at 61 s: stage4_speedup=1.3 roofline_ratio=0.5"
    assert "FAILED" not in item
    assert (
        part_item("step", "cut", None, [], 10.0, tmp_path) == "step cut at 10 s: nothing measured"
    )
    assert part_item("step", "failed", 1, [], 3.0, tmp_path).startswith("step FAILED (exit 1)")
    gate = part_item("gate", "cut", None, ["sizing: …"], 200.0, tmp_path)
    assert gate.startswith("gate cut at 200 s: undecided")
