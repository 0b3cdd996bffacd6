"""A plan's name never places a run outside `runs/` and never reaches the terminal raw."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

from growcockpit.cli import main
from growcockpit.plan import PlanError, loads_plan
from growcockpit.plan.names import MAX_NAME_LEN, name_problem
from growcockpit.protocol.rundir import RunDirError, inside_runs, new_run_dir
from growcockpit.session.run_client import RunClient

ROOT = REPO
TINY = (ROOT / "tests" / "plans" / "tiny.toml").read_text()

# (name as written in TOML, what the error must name)
HOSTILE = [
    ("../x/escaped", '"/"'),
    ("/tmp/abs", '"/"'),
    ("a\\u0000b", "U+0000"),
    ("x" * 300, "300 characters"),
    ("red\\u001b[31m", "U+001B"),
    ("two\\nlines", "U+000A"),
    ("evil\\u202Etxt.exe", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
    ("..", 'starts with "."'),
    ("-rf", 'starts with "-"'),
    ("my plan", '" "'),
]


def _with_name(toml_name: str) -> str:
    return TINY.replace('name = "tiny"', f'name = "{toml_name}"', 1)


@pytest.mark.parametrize(("toml_name", "named"), HOSTILE)
def test_hostile_name_is_one_line_naming_the_character(toml_name: str, named: str) -> None:
    with pytest.raises(PlanError) as err:
        loads_plan(_with_name(toml_name), source="p.toml")
    text = str(err.value)
    assert text.startswith("p.toml:2: name: ") and named in text
    assert text.isprintable() and len(text) < 300
    assert 'e.g. name = "' in text  # the fix: a safe name to paste


def test_plain_names_pass() -> None:
    for name in ("tiny", "mslt-bert-base", "v1.2_run", "A" * MAX_NAME_LEN):
        assert name_problem(name) is None, name


@pytest.mark.parametrize(
    "raw", ["../x/escaped", "/etc/passwd", "a\x00b", "x" * 300, "\u202e..", ""]
)
def test_new_run_dir_stays_inside_runs(tmp_path: Path, raw: str) -> None:
    runs = tmp_path / "runs"
    made = new_run_dir(runs, raw, now=0.0)
    assert made.parent == runs.resolve() and made.is_dir()
    assert len(made.name) < 100 and made.name.isascii() and made.name.isprintable()


def test_symlink_inside_runs_cannot_lead_out(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(RunDirError, match="outside the runs directory"):
        inside_runs(runs, runs / "link" / "run")
    with pytest.raises(RunDirError):
        inside_runs(runs, runs / ".." / "x")
    with pytest.raises(RunDirError):
        inside_runs(runs, Path("/tmp/abs"))


def test_cockpit_launch_of_an_unvalidated_name_stays_inside(tmp_path: Path) -> None:
    """The cockpit reads the raw TOML name for the directory before any validation."""
    plan = tmp_path / "p.toml"
    plan.write_text(_with_name("../x/escaped"))
    fake = tmp_path / "fake-python"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    run_dir = RunClient.launch(plan, tmp_path / "runs", python=str(fake), now=lambda: 0.0)
    RunClient(run_dir).process.wait(10)  # type: ignore[union-attr]
    assert run_dir.parent == (tmp_path / "runs").resolve()
    assert not (tmp_path / "x").exists()


def test_train_refuses_escaping_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text(_with_name("../x/escaped"))
    monkeypatch.chdir(tmp_path)
    assert main(["train", str(plan)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and 'contains "/"' in err
    assert not (tmp_path / "x").exists() and not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_plan_validate_subprocess_nul_name(tmp_path: Path) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text(_with_name("a\\u0000b"))
    res = subprocess.run(
        [sys.executable, "-m", "growcockpit", "plan", "validate", str(plan)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "U+0000" in res.stderr and res.stderr.count("\n") == 1


def test_train_refusal_before_any_run_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing corpus is refused before the (validated) name becomes a directory."""
    plan = tmp_path / "p.toml"
    plan.write_text(TINY.replace('source = "builtin"', f'source = "{tmp_path / "no-corpus"}"'))
    monkeypatch.chdir(tmp_path)
    assert main(["train", str(plan)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not (tmp_path / "runs").exists()
