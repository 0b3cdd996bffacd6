"""A mistyped `data.source` or `data.tokenizer` is answered with the nearest name that exists.

`trian:500` meant `train:500`, not a hub download; `own.jsnl` next to `own.jsonl` meant that
file, not a hub dataset. A relative path that is not there says the absolute path it looked
for and that relative paths are read from the launch directory. No message prints the
Hugging Face cache's absolute path.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from growcockpit.plan.data_checks import source_problems, tokenizer_problems
from growcockpit.plan.types import DataSpec


@pytest.fixture(autouse=True)
def launch_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache-dir"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    return tmp_path


def only(problems: list[tuple[str, str]]) -> str:
    [(_, problem)] = problems
    assert "\n" not in problem
    return problem


def test_a_mistyped_train_tokenizer_suggests_train() -> None:
    problem = only(tokenizer_problems(DataSpec(tokenizer="trian:500")))
    assert "did you mean 'train:500'" in problem
    assert "hf download" not in problem


def test_a_mistyped_source_suggests_the_file_next_to_it(launch_dir: Path) -> None:
    (launch_dir / "own.jsonl").write_text('{"text": "hello"}\n')
    problem = only(source_problems(DataSpec(source="own.jsnl")))
    assert "did you mean 'own.jsonl'" in problem and "hf download" not in problem
    assert f"looked for {launch_dir / 'own.jsnl'}" in problem


def test_a_mistyped_source_in_a_subdirectory(launch_dir: Path) -> None:
    (launch_dir / "byo").mkdir()
    (launch_dir / "byo" / "own.jsonl").write_text('{"text": "hello"}\n')
    problem = only(source_problems(DataSpec(source="byo/own.jsnl")))
    assert "did you mean 'byo/own.jsonl'" in problem


def test_a_missing_relative_path_says_where_it_looked(launch_dir: Path) -> None:
    os.mkdir(launch_dir / "repo")
    os.chdir(launch_dir / "repo")
    problem = only(source_problems(DataSpec(source="../byo/own.txt")))
    assert f"looked for {launch_dir / 'byo' / 'own.txt'}" in problem
    assert "relative paths are read from the directory you launch in" in problem


def test_an_unknown_hub_name_keeps_the_download_advice(launch_dir: Path) -> None:
    tok = only(tokenizer_problems(DataSpec(tokenizer="someone/tokenizer")))
    assert "hf download someone/tokenizer" in tok
    assert "hf-cache-dir" not in tok and "hf-home" not in tok
    src = only(source_problems(DataSpec(source="someone/dataset")))
    assert "hf download --repo-type dataset someone/dataset" in src


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["trian", "tarin", "trai", "trainn", "rain", "Train"]), st.integers(1, 99999)
)
def test_near_misses_of_train_suggest_train(prefix: str, vocab: int) -> None:
    problem = only(tokenizer_problems(DataSpec(tokenizer=f"{prefix}:{vocab}")))
    assert f"did you mean 'train:{vocab}'" in problem
