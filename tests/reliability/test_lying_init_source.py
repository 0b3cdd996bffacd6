"""Issue 22 §2: an `init_from` source that lies is refused before the run directory exists.

The source is a real `save_pretrained` directory of a tiny BERT that fits
tests/plans/tiny.toml; one file is then made to lie: a safetensors header
whose length or offsets are false, a tokenizer.json nested 20 000 deep, a FIFO
where config.json goes. `plan validate` and `train` answer in one line, exit 2,
no traceback, well within the timeout, and `train` creates no run directory.
"""

from __future__ import annotations

import json
import os
import struct
import time
from pathlib import Path

import pytest
from repo_paths import TINY_TOML
from run_fixtures import growcockpit

from growcockpit.plan.init_from import SourceError, read_source
from growcockpit.plan.source_files import check_safetensors, json_depth

TIMEOUT = 60


@pytest.fixture
def source(tmp_path: Path) -> Path:
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(
        vocab_size=2000,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    out = tmp_path / "source"
    BertForMaskedLM(config).save_pretrained(out)
    (out / "tokenizer.json").write_text(json.dumps({"version": "1.0", "model": {"vocab": {}}}))
    return out


def _plan(tmp_path: Path, source: Path) -> Path:
    text = TINY_TOML.read_text().replace("[model]\n", f'[model]\ninit_from = "{source}"\n', 1)
    path = tmp_path / "plan.toml"
    path.write_text(text)
    return path


def _header(path: Path) -> tuple[dict[str, object], bytes]:
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + length]), data[8 + length :]


def _write(path: Path, header: dict[str, object], body: bytes, length: int | None = None) -> None:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + body)


def _long_header(st: Path) -> None:
    header, body = _header(st)
    _write(st, header, body, length=1 << 40)


def _offsets_past_the_end(st: Path) -> None:
    header, body = _header(st)
    name = next(k for k in header if k != "__metadata__")
    entry = header[name]
    assert isinstance(entry, dict)
    entry["shape"] = [65536, 65536]
    entry["data_offsets"] = [0, 65536 * 65536 * 4]
    _write(st, header, body)


def _overlap(st: Path) -> None:
    header, body = _header(st)
    names = [k for k in header if k != "__metadata__"]
    a, b = header[names[0]], header[names[1]]
    assert isinstance(a, dict) and isinstance(b, dict)
    b["data_offsets"] = [
        a["data_offsets"][0],
        a["data_offsets"][0] + (b["data_offsets"][1] - b["data_offsets"][0]),
    ]  # type: ignore[index]
    _write(st, header, body)


def _deep_tokenizer(st: Path) -> None:
    (st.parent / "tokenizer.json").write_text("[" * 20_000 + "]" * 20_000)


def _fifo_config(st: Path) -> None:
    (st.parent / "config.json").unlink()
    os.mkfifo(st.parent / "config.json")


LIES = [
    ("header-length", _long_header, "header claims"),
    ("offsets-past-the-end", _offsets_past_the_end, "say otherwise"),
    ("overlap", _overlap, "overlap"),
    ("deep-tokenizer", _deep_tokenizer, "nested 20,000 deep"),
    ("fifo-config", _fifo_config, "not a regular file"),
]


def test_the_true_source_fits(source: Path) -> None:
    shape = read_source(str(source))
    assert (shape.layers, shape.hidden_size, shape.vocab_size) == (2, 32, 2000)
    assert check_safetensors(source / "model.safetensors")


@pytest.mark.parametrize(("lie", "said"), [c[1:] for c in LIES], ids=[c[0] for c in LIES])
def test_read_source_refuses_each_lie_at_once(source: Path, lie: object, said: str) -> None:
    lie(source / "model.safetensors")  # type: ignore[operator]
    started = time.perf_counter()
    with pytest.raises(SourceError) as err:
        read_source(str(source))
    assert time.perf_counter() - started < 2
    assert "\n" not in str(err.value) and said in str(err.value), err.value


def test_json_depth_is_linear_and_skips_strings() -> None:
    assert json_depth('{"a": "[[[[", "b": [1, [2]]}') == 3
    started = time.perf_counter()
    assert json_depth("[" * 1_000_000 + "]" * 1_000_000) == 1_000_000
    assert time.perf_counter() - started < 2


@pytest.mark.slow
@pytest.mark.parametrize(
    ("lie", "said"),
    [c[1:] for c in LIES if c[0] in ("header-length", "deep-tokenizer")],
    ids=["header-length", "deep-tokenizer"],
)
def test_train_refuses_before_the_run_directory_exists(
    tmp_path: Path, source: Path, gc_cache: Path, lie: object, said: str
) -> None:
    lie(source / "model.safetensors")  # type: ignore[operator]
    plan = _plan(tmp_path, source)
    run = tmp_path / "runs" / "r"
    for args in (["plan", "validate", str(plan)], ["train", str(plan), "--run-dir", str(run)]):
        res = growcockpit(*args, cache=gc_cache, timeout=TIMEOUT)
        assert res.returncode == 2, res.stderr
        assert "Traceback" not in res.stderr and "RecursionError" not in res.stderr
        assert res.stderr.count("\n") == 1 and said in res.stderr, res.stderr
    assert not run.exists() and not (tmp_path / "runs").exists()
