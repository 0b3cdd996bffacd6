"""`plan validate` checks `[data]`: the source can be read, the tokenizer loads, all at once.

Test data is written with `datasets` here; nothing is downloaded, and the checks
must not touch the network (a socket is refused while they run).
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from data_fixtures import data_plan

from growcockpit.cli import main
from growcockpit.plan.data_checks import source_problems, tokenizer_problems
from growcockpit.plan.types import DataSpec


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the data checks opened a socket")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))


def problems(tmp_path: Path, **data: str) -> list[tuple[str, str]]:
    spec = DataSpec(**data)  # type: ignore[arg-type]
    return source_problems(spec) + tokenizer_problems(spec)


def saved(tmp_path: Path, columns: dict[str, list[object]]) -> str:
    from datasets import Dataset

    Dataset.from_dict(columns).save_to_disk(str(tmp_path / "saved"))
    return str(tmp_path / "saved")


def test_a_missing_path_is_a_problem(tmp_path: Path) -> None:
    [(key, problem)] = problems(tmp_path, source=str(tmp_path / "nope.jsonl"))
    assert key == "data.source" and "no such file" in problem


@pytest.mark.parametrize(
    ("name", "body", "fix"),
    [
        ("data.csv", b"text\nhello\n", "to_parquet"),
        ("data.jsonl.gz", b"\x1f\x8b", "decompress"),
        ("data.pkl", b"\x80\x04", "to_parquet"),
    ],
)
def test_other_formats_are_refused_with_what_works(
    tmp_path: Path, name: str, body: bytes, fix: str
) -> None:
    (tmp_path / name).write_bytes(body)
    [(key, problem)] = problems(tmp_path, source=str(tmp_path / name))
    assert key == "data.source" and fix in problem and "\n" not in problem


def test_a_loading_script_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "mydata").mkdir()
    (tmp_path / "mydata" / "mydata.py").write_text("import datasets\n")
    [(_, problem)] = problems(tmp_path, source=str(tmp_path / "mydata"))
    assert "save_to_disk" in problem


def test_save_to_disk_without_the_text_column_names_the_key(tmp_path: Path) -> None:
    source = saved(tmp_path, {"body": ["a b c"] * 4})
    [(key, problem)] = problems(tmp_path, source=source)
    assert key == "data.text_column"
    assert "['body']" in problem and 'text_column = "body"' in problem
    assert problems(tmp_path, source=source, text_column="body") == []


def test_a_column_that_is_not_text_is_a_problem(tmp_path: Path) -> None:
    source = saved(tmp_path, {"text": [1, 2, 3]})
    [(key, problem)] = problems(tmp_path, source=source)
    assert key == "data.text_column" and "int64" in problem


def test_jsonl_and_arrow_columns_are_peeked(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text('{"content": "hello"}\n' * 3)
    [(key, problem)] = problems(tmp_path, source=str(tmp_path / "c.jsonl"))
    assert key == "data.text_column" and "content" in problem
    arrow = Path(saved(tmp_path, {"body": ["x y"] * 4})) / "data-00000-of-00001.arrow"
    copy = tmp_path / "alone.arrow"  # no dataset_info.json beside it: the schema's own metadata
    copy.write_bytes(arrow.read_bytes())
    [(key, problem)] = problems(tmp_path, source=str(copy))
    assert key == "data.text_column" and "body" in problem


def test_a_file_that_lies_about_its_format(tmp_path: Path) -> None:
    (tmp_path / "a.parquet").write_text("not parquet")
    (tmp_path / "b.txt").write_bytes(b"\xff\xfe\x00binary")
    assert "not a Parquet file" in problems(tmp_path, source=str(tmp_path / "a.parquet"))[0][1]
    assert "not UTF-8" in problems(tmp_path, source=str(tmp_path / "b.txt"))[0][1]


def test_tokenizers(tmp_path: Path) -> None:
    (tmp_path / "vocab-only").mkdir()
    (tmp_path / "vocab-only" / "vocab.txt").write_text("[PAD]\n")
    [(key, problem)] = problems(tmp_path, tokenizer=str(tmp_path / "vocab-only"))
    assert key == "data.tokenizer" and "tokenizer.json" in problem
    [(key, problem)] = problems(tmp_path, tokenizer="some-org/some-tokenizer")
    assert (
        "local Hugging Face cache" in problem and "hf download some-org/some-tokenizer" in problem
    )
    snapshot = tmp_path / "hub" / "models--some-org--some-tokenizer" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot / "tokenizer.json").write_text("{}")
    assert problems(tmp_path, tokenizer="some-org/some-tokenizer") == []


def test_a_hub_dataset_must_be_in_the_local_cache(tmp_path: Path) -> None:
    [(key, problem)] = problems(tmp_path, source="some-org/some-dataset")
    assert key == "data.source" and "hf download --repo-type dataset" in problem
    (tmp_path / "hub" / "datasets--some-org--some-dataset" / "snapshots" / "x").mkdir(parents=True)
    assert problems(tmp_path, source="some-org/some-dataset") == []


def test_validate_lists_every_problem_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "p.toml"
    data = f'source = "{tmp_path}/none.jsonl"\ntokenizer = "{tmp_path}/no-tokenizer"'
    plan.write_text(data_plan(data, steps=0))
    assert main(["plan", "validate", str(plan)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert [line.split(": ")[1] for line in lines] == [
        "data.source",
        "data.tokenizer",
        "stages[0].steps",
    ], lines
