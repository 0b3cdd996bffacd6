"""A full disk is one clear line, a crashed status, no partial checkpoint left."""

from __future__ import annotations

import errno
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from run_fixtures import env, growcockpit, of_type, tiny_plan

from growcockpit.backend.state.checkpoint import DiskFull, is_disk_full, remove_partial
from growcockpit.protocol import read_all, read_status
from growcockpit.protocol.events import Error, RunFinished, RunStarted, Step, WarningEvent

# torch.save fails like a full disk while writing the step-6 checkpoint: it has
# already written part of the file, as the real zip writer does.
FULL_DISK = """
import errno, sys, torch
real_save = torch.save
def save(obj, f, *a, **k):
    if "step-6" in str(f):
        with open(f, "wb") as fh:
            fh.write(b"PK partial")
        raise OSError(errno.ENOSPC, "No space left on device")
    return real_save(obj, f, *a, **k)
torch.save = save
from growcockpit.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def test_enospc_is_recognised_also_behind_torchs_zip_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert is_disk_full(OSError(errno.ENOSPC, "No space left on device"), tmp_path)
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"), tmp_path)
    torch_error = RuntimeError("[enforce fail at inline_container.cc:778] . unexpected pos 64 vs 0")
    monkeypatch.setattr(shutil, "disk_usage", lambda _: shutil._ntuple_diskusage(100, 100, 0))  # type: ignore[attr-defined]
    assert is_disk_full(torch_error, tmp_path)
    assert str(DiskFull(tmp_path / "x")) == (
        f"no space left on device writing {tmp_path / 'x'}; free space and `growcockpit resume`"
    )


def test_partial_checkpoints_are_removed(tmp_path: Path) -> None:
    (tmp_path / ".tmp-step-7-123").mkdir()
    (tmp_path / "step-5").mkdir()
    assert [p.name for p in remove_partial(tmp_path)] == [".tmp-step-7-123"]
    assert [p.name for p in tmp_path.iterdir()] == ["step-5"]


@pytest.mark.slow
def test_disk_full_then_free_space_and_resume(tmp_path: Path, gc_cache: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(tiny_plan(steps=(6, 6), every_steps=3))
    run = tmp_path / "run"
    res = subprocess.run(
        [sys.executable, "-c", FULL_DISK, "train", str(plan), "--run-dir", str(run)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env(gc_cache),
    )
    assert res.returncode == 1
    wanted = f"growcockpit: no space left on device writing {run}/checkpoints/.tmp-step-6-"
    assert res.stderr.startswith(wanted), res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.rstrip().endswith("free space and `growcockpit resume`")
    assert read_status(run).state == "crashed"
    events = read_all(run / "events.jsonl")
    errors = of_type(events, Error)
    assert len(errors) == 1 and errors[0].message.startswith("no space left on device writing")
    assert errors[0].traceback == ""
    assert of_type(events, RunFinished)[-1].status == "crashed"
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step-0", "step-3"]

    (run / "checkpoints" / ".tmp-step-4-99").mkdir()  # as a SIGKILL mid-write leaves it
    res = growcockpit("resume", str(run), cache=gc_cache)
    assert res.returncode == 0, res.stderr
    assert "from step-3" in res.stdout
    events = read_all(run / "events.jsonl")
    restart = max(i for i, e in enumerate(events) if isinstance(e, RunStarted))
    assert [s.step for s in of_type(events[restart:], Step)] == list(range(4, 13))
    assert any(".tmp-step-4-99" in w.message for w in of_type(events[restart:], WarningEvent))
    assert not list((run / "checkpoints").glob(".tmp-*"))
    assert read_status(run).state == "completed"
