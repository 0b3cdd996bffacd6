"""A resume checks the run's plan.toml against its checkpoint and the machine before building.

A real tiny run is trained to completion; its plan.toml is then edited to say
another model. `growcockpit resume RUN --force` must refuse in one line before
any model is built (no 17 GB allocation, no `crashed`), leaving status.json byte
for byte as it was.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from run_fixtures import tiny_plan, warm_growcockpit

from growcockpit.backend.state.checkpoint import CheckpointError
from growcockpit.backend.state.resume_checks import check_resume_memory
from growcockpit.plan import loads_plan


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory, gc_cache: Path) -> Path:
    top = tmp_path_factory.mktemp("resume-checks")
    plan = top / "plan.toml"
    plan.write_text(tiny_plan(steps=(2, 2), every_steps=2))
    res = warm_growcockpit("train", str(plan), "--run-dir", str(top / "run"), cache=gc_cache)
    assert res.returncode == 0, res.stderr
    return top / "run"


def _edited(finished: Path, tmp_path: Path, old: str, new: str) -> Path:
    run = tmp_path / "run"
    shutil.copytree(finished, run, symlinks=True)
    plan = run / "plan.toml"
    text = plan.read_text()
    assert re.search(old, text, flags=re.M)
    plan.write_text(re.sub(old, new, text, count=1, flags=re.M))
    return run


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        (r"^hidden_size = 32$", "hidden_size = 65536", "hidden 65536"),
        (r"^hidden_size = 32$", "hidden_size = 64", "hidden 64"),
    ],
    ids=["huge", "wider"],
)
def test_an_edited_plan_is_refused_before_building(
    finished: Path, tmp_path: Path, gc_cache: Path, old: str, new: str, said: str
) -> None:
    run = _edited(finished, tmp_path, old, new)
    before = (run / "status.json").read_bytes()
    events = (run / "events.jsonl").read_bytes()
    res = warm_growcockpit("resume", str(run), "--force", cache=gc_cache)
    assert res.returncode == 2, res.stdout + res.stderr
    err = res.stderr.strip()
    assert "\n" not in err and "Traceback" not in err and "allocate" not in err
    assert str(run / "plan.toml") in err and said in err and "checkpoint step-4 holds" in err
    assert (run / "status.json").read_bytes() == before
    assert (run / "events.jsonl").read_bytes() == events


def test_a_plan_too_big_for_the_machine_is_refused(tmp_path: Path) -> None:
    text = tiny_plan().replace("hidden_size = 32", "hidden_size = 65536")
    plan = loads_plan(text, "big.toml")
    with pytest.raises(
        CheckpointError,
        match=r"big.toml: stage \d .* needs about .* per rank for its weights, gradients and optimizer state alone, but",
    ):
        check_resume_memory(plan, "cpu", Path("big.toml"))
    check_resume_memory(loads_plan(tiny_plan(), "tiny.toml"), "cpu", Path("tiny.toml"))


def test_status_during_a_resume_start_is_starting_with_this_pid(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the checkpoint is checked (torch loading, seconds), `status` says "starting" and
    the resuming process's pid, not the old run's "stopped … pid <old pid>"; a refusal then
    puts status.json back byte for byte."""
    import signal

    from growcockpit.backend.state import checkpoint_checks
    from growcockpit.cli import main
    from growcockpit.protocol import read_status

    run = _edited(finished, tmp_path, r"^hidden_size = 32$", "hidden_size = 32")
    before = (run / "status.json").read_bytes()
    seen: list[tuple[str, int]] = []

    def checking(state: object, path: Path) -> object:
        status = read_status(run)
        seen.append((status.state, status.pid))
        raise CheckpointError(f"{path}: refused by the test")

    monkeypatch.setattr(checkpoint_checks, "check_state", checking)
    handlers = {
        sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    }
    try:
        assert main(["resume", str(run), "--force"]) == 2
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    assert seen == [("starting", os.getpid())]
    assert (run / "status.json").read_bytes() == before


def test_status_of_a_starting_run_has_no_empty_stage_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from growcockpit.cli import main
    from growcockpit.protocol.rundir import RunStatus, write_status

    run = tmp_path / "run"
    run.mkdir()
    write_status(
        run / "status.json",
        RunStatus(
            run_id="run",
            plan_name="p",
            state="starting",
            num_stages=2,
            total_steps=40,
            pid=os.getpid(),
            phase="imports",
        ),
    )
    assert main(["status", str(run)]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert "()" not in line and "starting (imports)" in line and "stage 1/2  step 0/40" in line
