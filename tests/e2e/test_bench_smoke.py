"""bench/stage_cost.py and bench/time_to_loss.py: plan templates, FLOPs, and tiny end-to-end runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from repo_paths import REPO

sys.path[:0] = [
    str(REPO / "bench" / "ttl"),
    str(REPO / "bench"),
]  # the time-to-quality study, common.py

import common  # noqa: E402

from growcockpit.plan import loads_plan, resolve_shapes  # noqa: E402


@pytest.mark.parametrize("scale", sorted(common.TTL_SIZES))
@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_method_plans_validate_and_see_the_same_tokens(scale: str, family: str) -> None:
    size = common.TTL_SIZES[scale][family]
    plans = [common.method_plan(m, size) for m in common.METHODS]
    plans += [common.method_plan("mslt", size, mslt=v) for v in common.MSLT_VARIANTS]
    for plan in plans:
        assert plan.total_steps == size.steps, plan.name
        assert resolve_shapes(plan)[-1].layers == size.layers
        assert resolve_shapes(plan)[-1].width == size.hidden
        assert size.steps % plan.metrics.eval_every_steps == 0
        # the TOML the benchmark writes loads back to the same plan
        again = loads_plan(common.plan_text(plan, "header"), plan.name)
        assert again.stages == plan.stages and again.model == plan.model


def test_mslt_paper_plan_freezes_the_bottom() -> None:
    size = replace(common.TTL_SIZES["cpu"]["bert"], layers=12, steps=1400)
    plan = common.method_plan("mslt", size)
    shapes = resolve_shapes(plan)
    assert [s.layers for s in plan.stages] == [3, 6, 9, 12, 12]
    assert [len(s.trainable_layers) for s in shapes] == [3, 3, 3, 3, 12]
    assert [s.steps for s in plan.stages] == [300, 300, 300, 300, 200]
    assert [s.embeddings_trainable() for s in plan.stages] == [True, False, False, False, True]


def test_the_bench_counts_flops_with_the_products_count() -> None:
    """One count: the bench's names are the plan package's functions (plan/flops.py)."""
    from growcockpit.plan import flops

    assert common.stage_step_flops is flops.stage_step_flops
    assert common.baseline_step_flops is flops.full_step_flops


def test_first_reach_interpolates() -> None:
    sys.path[:0] = [str(REPO / "bench" / "ttl"), str(REPO / "bench")]
    import time_to_loss

    pts = [
        {"step": 10, "wall_s": 1.0, "flops": 10.0, "val_loss": 6.0},
        {"step": 20, "wall_s": 2.0, "flops": 20.0, "val_loss": 5.0},
    ]
    assert time_to_loss.first_reach(pts, 5.5) == {"wall_s": 1.5, "flops": 15.0, "step": 15.0}
    assert time_to_loss.first_reach(pts, 4.0) is None
    assert time_to_loss.eval_every(480, 20) == 24
    assert 40 % time_to_loss.eval_every(40, 20) == 0


def _env(gc_cache: Path) -> dict[str, str]:
    return {
        **os.environ,
        "GROWCOCKPIT_CACHE": str(gc_cache),
        "HF_HUB_OFFLINE": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHONUNBUFFERED": "1",
    }


@pytest.mark.slow
def test_stage_cost_quick(gc_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "sc.json"
    cmd = [sys.executable, str(REPO / "bench" / "stage_cost.py"), "--quick", "--threads", "1"]
    cmd += ["--extra", "4:2:emb", "--json", str(out)]
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=_env(gc_cache), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.splitlines()[-1]
    assert re.match(
        r"stage_cost: stage4_step_speedup=\d+\.\d\dx \(model \d+\.\d\dx, textbook \d+\.\d\dx\) "
        r"worst_error=[+-]\d+% .* within_10pct=(yes|no) worst_fast_error=\d+% r=\d",
        last,
    ), proc.stdout
    result = json.loads(out.read_text())
    names = [row["config"] for row in result["rows"]]
    assert names == [
        "baseline/1 full",
        "mslt/1 shallow-1",
        "mslt/2 grow-2",
        "mslt/3 grow-3",
        "mslt/4 grow-4",
        "mslt/5 top2+emb",
    ]
    assert all(row["step_ms"] > 0 for row in result["rows"])
    assert result["rows"][-1]["embeddings_trainable"] is True


def test_budget_plans_spend_the_baseline_budget() -> None:
    import ttl_plans

    from growcockpit.plan import estimate_cost

    size = common.TTL_SIZES["cpu"]["gpt2"]
    budget = ttl_plans.Budget(400, 10)
    base = ttl_plans.budget_plan("baseline", size, 0, budget)
    assert base.total_steps == 400
    unit = estimate_cost(base).baseline_step_cost
    for method in ("mslt-paper", "mslt-longshallow-emb", "vcycle", "gong"):
        plan = ttl_plans.budget_plan(method, size, 0, budget)
        cost = estimate_cost(plan)
        # every stage but the last as in the equal-steps template; the last lengthened until
        # the estimated cost meets the budget, short of it by less than one eval interval
        same = common.method_plan(method.split("-")[0], size, 0, method[5:] or "paper")
        assert [s.steps for s in plan.stages[:-1]] == [s.steps for s in same.stages[:-1]]
        assert plan.stages[-1].steps > same.stages[-1].steps
        assert plan.total_steps % 10 == 0 and plan.total_steps > 400
        fill = cost.stages[-1].step_cost
        assert 400 * unit - 10 * fill <= cost.total <= 400 * unit + 1e-6, method
    short = ttl_plans.budget_plan("baseline-0.75x", size, 0, budget)
    assert short.total_steps == 300 and short.optim.warmup_steps == 15  # its own schedule
    best = ttl_plans.budget_plan("plan:cpu-mslt-best", size, 0, budget)
    # the bench's metrics, but a plateau plan keeps its step events every step (its patience
    # counts them; bench/ttl/ttl_plans.py with_step_log)
    assert best.total_steps > 400
    assert best.metrics == replace(base.metrics, log_every_steps=1)
    for bad, why in (
        ("nope", "unknown method"),
        ("baseline-2x", "fraction"),
        ("plan:missing", "no such plan file"),
        ("plan:cpu-demo", "not the benchmark's"),
    ):
        with pytest.raises(ttl_plans.MethodError, match=why):
            ttl_plans.budget_plan(bad, size, 0, budget)


def test_seed_summary_and_markdown() -> None:
    import ttl_report

    def res(seed: int, final: float, wall: float | None, flops: float | None) -> dict[str, object]:
        return {
            "seed": seed,
            "final_val_loss": final,
            "target": 5.0,
            "reach": {"wall_s": 1.0} if wall else None,
            "speedup_wall": wall,
            "speedup_flops": flops,
            "flops_ratio": 1.0,
            "wall_ratio": 1.0,
            "steps": 400,
        }

    runs = [
        {"baseline": res(s, 5.0, 1.0, 1.0), "grown": res(s, f, w, fl)}
        for s, f, w, fl in ((0, 4.9, 1.5, 2.0), (1, 4.95, 1.2, 1.8), (2, 5.1, None, None))
    ]
    summary = ttl_report.summarise(runs)
    grown = summary["grown"]
    assert grown["reached"] == 2 and grown["seeds"] == [0, 1, 2]
    # the seed that never reached counts as 0×: median 1.2, not 1.35
    assert grown["speedup_wall"] == {"median": 1.2, "min": 0.0, "max": 1.5}
    assert grown["delta"]["median"] == pytest.approx(-0.05)
    md = ttl_report.markdown({"families": {"gpt2": {"summary": summary}}})
    row = next(line for line in md.splitlines() if line.startswith("| grown"))
    assert "| 2/3 |" in row and "1.80× (n/r–2.00)" in row and "1.20× (n/r–1.50)" in row


def _ttl(tmp_path: Path, gc_cache: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(REPO / "bench" / "time_to_loss.py"), "--quick", "--family", "gpt2"]
    cmd += ["--threads", "1", "--steps", "24", "--evals", "6", *extra]
    return subprocess.run(
        cmd, cwd=tmp_path, env=_env(gc_cache), capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_time_to_loss_quick_budget(gc_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "ttl.json"
    runs = tmp_path / "runs"
    methods = "baseline,baseline-0.5x,mslt-longshallow-emb,vcycle"
    proc = _ttl(
        tmp_path, gc_cache, "--methods", methods, "--parallel", "2", "--json", str(out),
        "--runs-dir", str(runs), "--plot",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.splitlines()[-1]
    for key in ("baseline_0_5x", "mslt_longshallow_emb", "vcycle"):
        value = r"(\d+\.\d\dx|n/r)"
        assert re.search(
            rf"gpt2\.{key}_speedup_to_baseline_loss=({value}|unclaimed\({value}\))", last
        )
    assert "gpt2.baseline_lr=untuned(0.002)" in last and "LR was NOT tuned" in proc.stdout
    data = json.loads(out.read_text())
    assert data["mode"] == "budget"
    fam = data["families"]["gpt2"]
    assert fam["budget_baseline_steps"] == 24
    run = fam["runs"][0]
    # the fixed-size controls run by default: depth 1 and half depth (the depth gate's arms)
    assert list(run)[:8] == [
        "baseline", "baseline-0.5x", "mslt-longshallow-emb", "vcycle", "depth-1", "depth-2",
        "full@0.5", "full@0.25",
    ]  # fmt: skip
    # full@plan: at this tiny budget a fitted plan is rounded down to 0.8-0.95 of it
    assert all(re.fullmatch(r"full@0\.\d+", m) for m in list(run)[8:])
    # the full model on shorter schedules runs by default; each growth method gets a claim
    assert run["full@0.5"]["steps"] == 12 and 0 < run["full@0.25"]["steps"] <= 6
    assert set(fam["claims"]) == {"mslt-longshallow-emb", "vcycle"}
    assert re.search(r"gpt2\.vcycle_claim=(claimed|unclaimed|undecided)", last)
    assert run["depth-1"]["steps"] > run["depth-2"]["steps"] > 24
    assert re.search(r"gpt2\.depth_gate=(pays|does_not_pay) gpt2\.best_fixed_depth=[124] ", last)
    gate = fam["depth_gate"]
    assert gate["baseline"]["layers"] == 4 and [c["layers"] for c in gate["controls"]] in (
        [1, 2],
        [2, 1],
    )
    if not gate["pays"]:
        assert "no growth speedup is claimed" in proc.stdout
        assert "gpt2.vcycle_speedup_to_baseline_loss=unclaimed(" in last
    for name, res in run.items():
        assert res["rc"] == 0 and res["status"] == "completed", name
        assert res["evals"][-1]["step"] == res["steps"] and res["wall_s"] > 0
    assert run["baseline"]["steps"] == 24 and run["baseline-0.5x"]["steps"] == 12
    assert run["mslt-longshallow-emb"]["steps"] > 24 and run["vcycle"]["steps"] > 24
    assert run["baseline"]["speedup_wall"] == pytest.approx(1.0)
    assert 0.9 < run["vcycle"]["cost_vs_budget"] <= 1.0
    assert fam["summary"]["vcycle"]["seeds"] == [0]
    assert "validation loss vs training wall time" in proc.stdout
    assert re.search(r"validation loss vs estimated [GMTP]FLOPs", proc.stdout)
    # a second invocation reuses the finished runs instead of training them again; with an
    # LR sweep the runs at the scale's own LR (2e-3) are reused, the 4e-3 ones trained
    swept = tmp_path / "sweep.json"
    again = _ttl(
        tmp_path, gc_cache, "--methods", "baseline,vcycle", "--runs-dir", str(runs),
        "--lrs", "4e-3,2e-3", "--json", str(swept), "--no-depth-controls",
    )  # fmt: skip
    # reused: the baseline, vcycle and the two short-schedule controls at 2e-3
    assert again.returncode == 0 and again.stdout.count("(reused)") == 4, again.stdout
    assert (runs / "gpt2" / "seed0" / "vcycle@lr0.004").is_dir()
    fam_sweep = json.loads(swept.read_text())["families"]["gpt2"]
    table = fam_sweep["lr_sweep"]
    assert set(table) == {"baseline", "vcycle", "full@0.5", "full@0.25"}
    assert set(table["vcycle"]["lrs"]) == {
        "0.002",
        "0.004",
    }
    for method, row in table.items():
        best_lr = row["best_lr"]
        assert row["lrs"][f"{best_lr:g}"] == min(v for v in row["lrs"].values() if v is not None)
        assert fam_sweep["runs"][0][method]["lr"] == best_lr
    assert "LR sweep, median final val loss" in again.stdout
    # the short controls at their best LR count as finished (no depth control: undecided)
    assert "did not finish" not in fam_sweep["claims"]["vcycle"]["text"]
    picked = fam_sweep["runs"][0]["baseline"]["lr"]
    assert fam_sweep["baseline_lr"] == {"lr": picked, "swept": [2e-3, 4e-3], "tuned": True}
    assert f"gpt2.baseline_lr=tuned({picked:g})" in again.stdout.splitlines()[-1]
    assert "widen --lrs" in again.stdout  # of two LRs, either pick is at an edge
    # the cockpit's headless verdict on the same real runs agrees with the benchmark
    seed0 = runs / "gpt2" / "seed0"
    verdict = subprocess.run(
        [
            sys.executable,
            "-m",
            "growcockpit",
            "compare",
            str(seed0 / "baseline"),
            str(seed0 / "vcycle"),
            "--json",
        ],
        cwd=REPO,
        env=_env(gc_cache),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert verdict.returncode == 0, verdict.stderr
    v = json.loads(verdict.stdout)["runs"][1]["verdict"]
    if run["vcycle"]["speedup_wall"] is None:
        assert v["speedup_wall"] is None
    else:
        assert v["speedup_wall"] == pytest.approx(run["vcycle"]["speedup_wall"], rel=1e-6)
    replot = subprocess.run(
        [sys.executable, str(REPO / "bench" / "time_to_loss.py"), "--replot", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert replot.returncode == 0 and "gpt2: validation loss" in replot.stdout
    assert "\x1b[" not in replot.stdout


@pytest.mark.slow
def test_time_to_loss_quick_same_steps(gc_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "ttl.json"
    proc = _ttl(
        tmp_path, gc_cache, "--same-steps", "--methods", "baseline,mslt", "--json", str(out)
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    value = r"(\d+\.\d\dx|n/r)"  # unclaimed(...) without the controls a claim needs
    assert re.search(
        rf"gpt2\.mslt_speedup_to_baseline_loss=({value}|unclaimed\({value}\))", proc.stdout
    )
    data = json.loads(out.read_text())
    run = data["families"]["gpt2"]["runs"][0]
    assert data["mode"] == "same-steps" and sorted(run) == ["baseline", "mslt"]
    assert run["mslt"]["steps"] == run["baseline"]["steps"] == 24
    assert [p["step"] for p in run["mslt"]["evals"]] == [4, 8, 12, 16, 20, 24]
    assert run["mslt"]["flops"] < run["baseline"]["flops"]


def test_time_to_loss_bad_method_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "time_to_loss.py"),
            "--quick",
            "--methods",
            "baseline,bogus",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "unknown method 'bogus'" in proc.stderr
    assert proc.stderr.count("\n") == 1
