"""A crash on a full disk still leaves status.json saying "crashed": the atomic
write (a temp file, then a rename) needs a free block and failed, so the file kept saying
"running"; it is now rewritten in place, in the blocks it already has."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from growcockpit.protocol import rundir
from growcockpit.protocol.rundir import RunStatus, read_status, write_status
from growcockpit.protocol.safe_fs import UnsafePath


def full_disk(path: Path | str, data: bytes, mode: int = 0) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_crash_on_a_full_disk_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status = RunStatus(run_id="r", state="running", plan_name="p" * 300, pid=os.getpid())
    write_status(tmp_path / "status.json", status)
    monkeypatch.setattr(rundir, "write_atomic", full_disk)
    status.state, status.plan_name = "crashed", "p"  # shorter than before: cut to length
    write_status(tmp_path / "status.json", status)
    assert read_status(tmp_path).state == "crashed"


def test_other_errors_and_links_are_not_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    (tmp_path / "status.json").symlink_to(target)
    monkeypatch.setattr(rundir, "write_atomic", full_disk)
    with pytest.raises((OSError, UnsafePath)):
        write_status(tmp_path / "status.json", RunStatus(state="crashed"))
    assert target.read_text() == "{}"

    def denied(path: Path | str, data: bytes, mode: int = 0) -> None:
        raise OSError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(rundir, "write_atomic", denied)
    with pytest.raises(PermissionError):
        write_status(tmp_path / "s2.json", RunStatus(state="crashed"))
