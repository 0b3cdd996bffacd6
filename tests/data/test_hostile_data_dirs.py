"""Dataset directories that lie: deep JSON, cut-short shards, FIFOs where files belong.

Each is refused by `plan validate` in one line naming the file, before a run
directory exists; none is opened if it is not a regular file (a FIFO would block).
The datasets are real ones written by `datasets.save_to_disk` / `to_parquet`.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from data_fixtures import source_plan

from growcockpit.cli import main
from growcockpit.plan.data_checks import source_problems
from growcockpit.plan.data_source import SourceProblem, resolve_source
from growcockpit.plan.types import DataSpec

DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from datasets import Dataset, DatasetDict

    root = tmp_path_factory.mktemp("written")
    ds = Dataset.from_dict({"text": [f"line {i} of the corpus" for i in range(500)]})
    ds.save_to_disk(str(root / "saved"))
    DatasetDict({"train": ds, "validation": ds.select(range(20))}).save_to_disk(str(root / "dd"))
    ds.to_parquet(str(root / "d.parquet"))
    return root


def copy_of(written: Path, name: str, tmp_path: Path) -> Path:
    import shutil

    dest = tmp_path / name
    if (written / name).is_dir():
        shutil.copytree(written / name, dest)
    else:
        shutil.copy(written / name, dest)
    return dest


def only_problem(source: Path | str) -> str:
    [(key, problem)] = source_problems(DataSpec(source=str(source)))
    assert key == "data.source" and "\n" not in problem
    return problem


def test_real_datasets_pass(written: Path) -> None:
    for name in ("saved", "dd", "d.parquet"):
        assert source_problems(DataSpec(source=str(written / name))) == []


@pytest.mark.parametrize("name", ["state.json", "dataset_info.json"])
def test_deep_saved_json_is_one_line(
    written: Path, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = copy_of(written, "saved", tmp_path)
    (saved / name).write_bytes(DEEP)
    problem = only_problem(saved)
    assert str(saved / name) in problem and "nested more than 64" in problem
    assert "save_to_disk" in problem
    plan = tmp_path / "p.toml"
    plan.write_text(source_plan(saved))
    assert main(["plan", "validate", str(plan)]) != 0
    err = capsys.readouterr()
    assert "Traceback" not in err.out + err.err and "RecursionError" not in err.out + err.err


def test_deep_dataset_dict_json_is_one_line(written: Path, tmp_path: Path) -> None:
    dd = copy_of(written, "dd", tmp_path)
    (dd / "dataset_dict.json").write_bytes(DEEP)
    with pytest.raises(SourceProblem, match="dataset_dict.json: not valid JSON"):
        resolve_source(str(dd))


def test_deep_first_jsonl_line_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "own.jsonl"
    path.write_bytes(b'{"a": ' * 5_000 + b"1" + b"}" * 5_000 + b"\n")
    assert "own.jsonl line 1: not valid JSON" in only_problem(path)


@pytest.mark.parametrize("cut", [1, 8, 100])
def test_a_cut_arrow_shard_is_named(written: Path, tmp_path: Path, cut: int) -> None:
    saved = copy_of(written, "saved", tmp_path)
    [shard] = saved.glob("*.arrow")
    shard.write_bytes(shard.read_bytes()[:-cut])
    problem = only_problem(saved)
    assert shard.name in problem and "cut short" in problem


def test_a_cut_validation_shard_is_named(written: Path, tmp_path: Path) -> None:
    dd = copy_of(written, "dd", tmp_path)
    [shard] = (dd / "validation").glob("*.arrow")
    shard.write_bytes(shard.read_bytes()[:-20])
    assert "cut short" in only_problem(dd)


@pytest.mark.parametrize("cut", [1, 4, 500])
def test_a_cut_parquet_file_is_named(written: Path, tmp_path: Path, cut: int) -> None:
    path = copy_of(written, "d.parquet", tmp_path)
    path.write_bytes(path.read_bytes()[:-cut])
    problem = only_problem(path)
    assert "d.parquet" in problem and ("cut short" in problem or "damaged" in problem)


def test_a_parquet_footer_that_lies_is_named(written: Path, tmp_path: Path) -> None:
    path = copy_of(written, "d.parquet", tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:-8] + (len(data) * 2).to_bytes(4, "little") + b"PAR1")
    assert "footer claims" in only_problem(path)


def _never_opened(path: Path) -> threading.Timer:
    """Open the FIFO's write end if the check hangs on it, so a failing test ends."""

    def unblock() -> None:
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        os.close(fd)

    timer = threading.Timer(5.0, unblock)
    timer.start()
    return timer


@pytest.mark.parametrize("name", ["state.json", "shard", "dataset_info.json"])
def test_a_fifo_in_a_saved_directory(written: Path, tmp_path: Path, name: str) -> None:
    saved = copy_of(written, "saved", tmp_path)
    target = next(saved.glob("*.arrow")) if name == "shard" else saved / name
    target.unlink()
    os.mkfifo(target)
    timer = _never_opened(target)
    try:
        problem = only_problem(saved)
    finally:
        timer.cancel()
    assert f"{target} is not a regular file" in problem


def test_a_fifo_jsonl_source(tmp_path: Path) -> None:
    fifo = tmp_path / "own.jsonl"
    os.mkfifo(fifo)
    timer = _never_opened(fifo)
    try:
        problem = only_problem(fifo)
    finally:
        timer.cancel()
    assert f"{fifo} is not a regular file" in problem
