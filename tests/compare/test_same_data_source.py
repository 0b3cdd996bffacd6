"""`compare` holds two runs to the same data by what they read, not by how the plan spelled it.

`own.txt` launched in the data directory and `../byo/own.txt` launched beside it are one
file: both runs record the same resolved path and content fingerprint in `run_started`,
so they are comparable. Two files of one name with different content are not, and the
line names both resolved paths. Runs logged before the fingerprint fall back to the text.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from repo_paths import TINY_TOML

from growcockpit.compare.comparable import mismatches
from growcockpit.plan.data_source import builtin_files
from growcockpit.plan.source_identity import source_identity

TEXT = "To be, or not to be, that is the question.\n" * 200


@contextmanager
def cwd(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _plan(source: str) -> dict[str, object]:
    return {"model": {"family": "bert"}, "data": {"source": source, "seq_len": 64}}


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    (tmp_path / "byo").mkdir()
    (tmp_path / "repo").mkdir()
    (tmp_path / "byo" / "own.txt").write_text(TEXT)
    return tmp_path


def test_one_file_by_two_relative_paths_is_one_source(layout: Path) -> None:
    with cwd(layout / "byo"):
        here = source_identity("own.txt")
    with cwd(layout / "repo"):
        there = source_identity("../byo/own.txt")
    assert here == there and here["path"] == str((layout / "byo" / "own.txt").resolve())
    assert mismatches(_plan("own.txt"), _plan("../byo/own.txt"), here, there) == []


def test_a_copy_elsewhere_has_the_same_content(layout: Path) -> None:
    shutil.copy(layout / "byo" / "own.txt", layout / "repo" / "copy.txt")
    with cwd(layout):
        a, b = source_identity("byo/own.txt"), source_identity("repo/copy.txt")
    assert a["fingerprint"] == b["fingerprint"] and a["path"] != b["path"]


def test_two_files_of_one_name_are_two_sources(layout: Path) -> None:
    (layout / "repo" / "own.txt").write_text(TEXT.upper())
    with cwd(layout / "byo"):
        here = source_identity("own.txt")
    with cwd(layout / "repo"):
        there = source_identity("own.txt")
    [found] = mismatches(_plan("own.txt"), _plan("own.txt"), here, there)
    assert found.what == "data source"
    assert str(layout / "byo" / "own.txt") in found.text
    assert str(layout / "repo" / "own.txt") in found.text


def test_a_file_changed_between_runs_is_named(layout: Path) -> None:
    with cwd(layout / "byo"):
        before = source_identity("own.txt")
        (layout / "byo" / "own.txt").write_text(TEXT + "one more line\n")
        after = source_identity("own.txt")
    [found] = mismatches(_plan("own.txt"), _plan("own.txt"), before, after)
    assert "changed since" in found.text


def test_runs_without_a_fingerprint_compare_the_text(layout: Path) -> None:
    [found] = mismatches(_plan("own.txt"), _plan("../byo/own.txt"), {}, None)
    assert found.text == "data source own.txt vs ../byo/own.txt"
    assert mismatches(_plan("builtin"), _plan("builtin"), {}, {}) == []
    assert source_identity("builtin") == {} and source_identity("owner/hub-name") == {}


def _train(plan_text: str, launch_in: Path, run_dir: Path, cache: Path) -> None:
    plan = launch_in / "plan.toml"
    plan.write_text(plan_text)
    env = dict(os.environ, GROWCOCKPIT_CACHE=str(cache), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    res = subprocess.run(
        [sys.executable, "-m", "growcockpit", "train", "plan.toml", "--run-dir", str(run_dir)],
        cwd=launch_in,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert res.returncode == 0, res.stderr[-2000:]


@pytest.mark.slow
def test_a_real_run_records_its_source_and_compares_by_it(layout: Path, gc_cache: Path) -> None:
    """One real tiny run launched in the data directory; its twin's log says the plan was
    `../byo/own.txt` launched from repo/ (what a second launch there records)."""
    shutil.copy(builtin_files()[0], layout / "byo" / "own.txt")
    text = TINY_TOML.read_text().replace('source = "builtin"', 'source = "own.txt"')
    text = text.replace("steps = 20", "steps = 2").replace(
        "eval_every_steps = 10", "eval_every_steps = 2"
    )
    first = layout / "runs" / "here"
    _train(text, layout / "byo", first, gc_cache)
    started = json.loads((first / "events.jsonl").read_text().splitlines()[0])
    assert started["type"] == "run_started"
    recorded = started["data_source"]
    assert recorded["path"] == str((layout / "byo" / "own.txt").resolve())
    with cwd(layout / "repo"):
        assert source_identity("../byo/own.txt") == recorded
        twin_identity = source_identity("../byo/own.txt")
    twin = layout / "runs" / "there"
    shutil.copytree(first, twin)
    lines = (twin / "events.jsonl").read_text().splitlines()
    event = json.loads(lines[0])
    event["plan"]["data"]["source"] = "../byo/own.txt"
    event["data_source"] = twin_identity
    (twin / "events.jsonl").write_text("\n".join([json.dumps(event), *lines[1:]]) + "\n")
    res = subprocess.run(
        [sys.executable, "-m", "growcockpit", "compare", str(first), str(twin)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert "not comparable" not in res.stdout, res.stdout
