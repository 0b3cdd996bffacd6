"""A FIFO (or a device, a directory, a huge file) where settings.json belongs
means default settings, at once: reading it used to wait for a writer, hanging the cockpit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from growcockpit.session.settings import load_settings, save_settings


def test_a_fifo_settings_file_reads_as_defaults_without_waiting(tmp_path: Path) -> None:
    path = tmp_path / "growcockpit" / "settings.json"
    path.parent.mkdir()
    os.mkfifo(path)
    code = (
        "import sys; from pathlib import Path; from growcockpit.session.settings import "
        "load_settings; print(load_settings(Path(sys.argv[1])))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=30
    )
    assert res.returncode == 0 and res.stdout.strip() == "{}", res.stderr
    assert save_settings({"theme": "light"}, path), "saving replaces the FIFO"
    assert load_settings(path) == {"theme": "light"}


@pytest.mark.parametrize("kind", ["directory", "huge", "link"])
def test_other_kinds(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "settings.json"
    if kind == "directory":
        path.mkdir()
        assert load_settings(path) == {}
    elif kind == "huge":
        path.write_text('{"theme": "light", "pad": "' + "x" * (1 << 20) + '"}')
        assert load_settings(path) == {}
    else:  # a dotfile manager's link to a real file is read
        (tmp_path / "real.json").write_text('{"theme": "light"}')
        path.symlink_to(tmp_path / "real.json")
        assert load_settings(path) == {"theme": "light"}
