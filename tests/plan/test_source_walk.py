"""`data.source` directories are walked with a ceiling, past tooling and virtual environments.

`data.source = ".."` walked a parent tree with a 1.6 GB `.venv` (and its `.git`) on every
keystroke that made the path a directory; a corpus lives in none of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from growcockpit.plan import source_walk
from growcockpit.plan.data_source import SourceProblem, resolve_source
from growcockpit.plan.source_walk import walk_files


def _tree(root: Path) -> None:
    (root / "data").mkdir(parents=True)
    (root / "data" / "a.txt").write_text("some text\n")
    (root / "b.txt").write_text("more text\n")
    for junk in (".git", "node_modules", "__pycache__", "pkg/.venv/lib", "env2/lib"):
        (root / junk).mkdir(parents=True)
        (root / junk / "x.json").write_text("{}")
        (root / junk / "y.parquet").write_bytes(b"PAR1")
    (root / "env2" / "pyvenv.cfg").write_text("home = /usr/bin\n")  # a venv by any name


def test_a_directory_source_skips_vcs_caches_and_virtual_environments(tmp_path: Path) -> None:
    _tree(tmp_path)
    found = resolve_source(str(tmp_path))
    assert found.kind == "text"
    assert sorted(Path(f).relative_to(tmp_path).as_posix() for f in found.files) == [
        "b.txt",
        "data/a.txt",
    ]


def test_the_walk_stops_at_its_limit_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(30):
        (tmp_path / f"{i:02}.txt").write_text("x")
    walk = walk_files(tmp_path, limit=10)
    assert walk.truncated and len(walk.files) <= 10
    assert not walk_files(tmp_path, limit=30).truncated
    monkeypatch.setattr(source_walk, "MAX_WALK_ENTRIES", 10)
    with pytest.raises(SourceProblem, match=r"more than 10 files and folders under it"):
        resolve_source(str(tmp_path))


def test_a_symlinked_directory_loop_ends(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("x")
    (tmp_path / "d" / "loop").symlink_to(tmp_path / "d", target_is_directory=True)
    assert [p.name for p in walk_files(tmp_path).files] == ["a.txt"]
