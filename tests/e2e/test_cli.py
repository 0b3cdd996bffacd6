"""The `growcockpit` command's user-facing errors: one line, a fix, exit 2, no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

ROOT = REPO


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "growcockpit", *args], capture_output=True, text=True, timeout=60
    )


def assert_one_line_error(res: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_plan_validate_accepts_shipped_plans() -> None:
    plans = sorted(str(p) for p in (ROOT / "sample_plans").glob("*.toml"))
    res = run("plan", "validate", *plans)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count(": ok") == len(plans)


def test_plan_validate_rejects_bad_plan(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        (ROOT / "tests" / "plans" / "tiny.toml")
        .read_text()
        .replace('train = "new"', 'train = "newest"')
    )
    res = run("plan", "validate", str(bad))
    assert_one_line_error(res, f"{bad}:", "stages[1].train")


def test_plan_show_prints_cost() -> None:
    res = run("plan", "show", str(ROOT / "sample_plans" / "cpu-demo.toml"))
    assert res.returncode == 0, res.stderr
    assert "grow-4" in res.stdout and "speedup" in res.stdout.lower()


def test_plan_show_says_the_7b_sample_fits_80_gb_under_fsdp() -> None:
    res = run("plan", "show", str(ROOT / "sample_plans" / "llama-7b-fsdp-late.toml"))
    assert res.returncode == 0, res.stderr
    assert "memory per rank (FSDP on 8 ranks" in res.stdout
    assert "fits one 80 GB GPU (FSDP, 8 ranks)" in res.stdout
    res = run("plan", "show", str(ROOT / "sample_plans" / "cpu-demo.toml"), "--gpu-gb", "-1")
    assert res.returncode == 2 and "--gpu-gb" in res.stderr and "Traceback" not in res.stderr


def test_train_with_missing_plan_file(tmp_path: Path) -> None:
    res = run("train", str(tmp_path / "nope.toml"), "--run-dir", str(tmp_path / "r"))
    assert_one_line_error(res, "nope.toml")
    assert not (tmp_path / "r").exists()


def test_status_of_missing_and_corrupt_run_dirs(tmp_path: Path) -> None:
    assert_one_line_error(run("status", str(tmp_path / "none")), "no such run directory")
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "status.json").write_text("{not json")
    assert_one_line_error(run("status", str(corrupt), "--json"), "status.json", "events.jsonl")


def test_status_reports_dead_backend_as_crashed(tmp_path: Path) -> None:
    run_dir = tmp_path / "dead"
    run_dir.mkdir()
    (run_dir / "status.json").write_text(
        json.dumps({"run_id": "dead", "state": "running", "pid": 999999999})
    )
    res = run("status", str(run_dir), "--json")
    assert res.returncode == 0
    assert json.loads(res.stdout)["state"] == "crashed"


def test_ctl_errors(tmp_path: Path) -> None:
    assert_one_line_error(run("ctl", str(tmp_path), "pause"), "no backend is listening")
    assert_one_line_error(run("ctl", str(tmp_path), "set_lr", "fast"), "set_lr")
    assert_one_line_error(run("attach", str(tmp_path / "none")), "no such run directory")


def test_plan_show_calibrates_r_and_h(gc_cache: Path) -> None:
    import os

    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "growcockpit",
            "plan",
            "show",
            str(ROOT / "tests" / "plans" / "tiny.toml"),
            "--calibrate",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=dict(os.environ, GROWCOCKPIT_CACHE=str(gc_cache)),
    )
    assert res.returncode == 0, res.stderr
    first = res.stdout.splitlines()[0]
    assert first.startswith("calibrated on this machine: r = ")
    r = float(first.split("r = ")[1].split()[0])
    if "calibration is not plausible" in res.stdout:  # a loaded machine: said, not hidden
        assert "The machine looks loaded" in res.stdout
    else:
        assert r >= 1.0  # a measured ratio; its value depends on the machine
    assert f"(r = {r:.2f}, head h" in res.stdout, "the estimate must use the measured r"


def test_train_with_a_missing_corpus_fails_before_creating_the_run(tmp_path: Path) -> None:
    tiny = (ROOT / "tests" / "plans" / "tiny.toml").read_text()
    plan = tmp_path / "plan.toml"
    plan.write_text(tiny.replace('source = "builtin"', f'source = "{tmp_path}/none/*.txt"'))
    res = run("train", str(plan), "--run-dir", str(tmp_path / "r"))
    assert_one_line_error(res, "plan.toml", "data.source", "no .txt/.jsonl/.parquet files")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["status", "{run}"],
        ["status", "{run}", "--json"],
        ["ctl", "{run}", "pause", "--timeout", "0.1"],
        ["plan", "validate", str(ROOT / "sample_plans" / "cpu-demo.toml")],
    ],
    ids=["help", "status", "status-json", "ctl", "plan-validate"],
)
def test_cheap_subcommands_never_import_torch(tmp_path: Path, argv: list[str]) -> None:
    """`--help`, `status`, `ctl` and `plan validate` must start in a fraction of a second over SSH."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "status.json").write_text(
        json.dumps({"run_id": "r", "state": "running", "pid": 999999999})
    )
    argv = [a.replace("{run}", str(run_dir)) for a in argv]
    code = (
        "import sys\n"
        "from growcockpit.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print('HEAVY=' + ','.join(m for m in ('torch', 'transformers', 'datasets') if m in sys.modules))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60
    )
    assert "Traceback" not in res.stderr, res.stderr
    assert res.stdout.splitlines()[-1] == "HEAVY=", res.stdout
