"""An `init_from` source that lies is refused before the run directory exists.

The source is a real `save_pretrained` directory of a tiny BERT that fits
tests/plans/tiny.toml; one file is then made to lie: a safetensors header
whose length or offsets are false, a tokenizer.json nested 20 000 deep, a FIFO
where config.json goes; or a header that is self-consistent but lies about the
model (a tensor of another shape, a body weight left out, an extra layer, an int
weight), named with the shape found and the shape config.json implies. `plan
validate` (header lies) and `train` (all) answer in one line, exit 2,
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
from growcockpit.plan.types import Plan

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
    ("deep-tokenizer", _deep_tokenizer, "nested more than 64 levels deep"),
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
    # linear, not quadratic: 10x the nesting costs about 10x (quadratic would be 100x); a
    # ratio of two timings in one run, so a loaded machine slows both alike
    seconds = []
    for n in (100_000, 1_000_000):
        started = time.perf_counter()
        assert json_depth("[" * n + "]" * n) == n
        seconds.append(time.perf_counter() - started)
    assert seconds[1] < 40 * max(seconds[0], 1e-3), seconds


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


# A header that is self-consistent but lies about the model: the right names with other
# shapes, a body weight left out, a layer config.json does not have, a weight stored as ints.
# Written with safetensors itself, so only the comparison with config.json can tell.


def _rewrite(st: Path, change: object) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(st)
    change(tensors)  # type: ignore[operator]
    save_file(tensors, st, metadata={"format": "pt"})


def _wider_embedding(t: dict[str, object]) -> None:
    import torch

    t["bert.embeddings.word_embeddings.weight"] = torch.zeros(2000, 33)


def _missing_layer_weight(t: dict[str, object]) -> None:
    del t["bert.encoder.layer.1.attention.self.query.weight"]


def _extra_layer(t: dict[str, object]) -> None:
    import torch

    t["bert.encoder.layer.2.attention.self.query.weight"] = torch.zeros(32, 32)


def _integer_weight(t: dict[str, object]) -> None:
    import torch

    t["bert.encoder.layer.0.output.dense.weight"] = torch.zeros(32, 64, dtype=torch.int32)


WEIGHT_LIES = [
    ("wider-embedding", _wider_embedding, "has shape [2000, 33] but its config.json implies [2000, 32]"),
    ("missing-layer-weight", _missing_layer_weight, 'no tensor "bert.encoder.layer.1.attention.self.query.weight" (shape [32, 32])'),
    ("extra-layer", _extra_layer, "belongs to a layer its config.json does not have"),
    ("integer-weight", _integer_weight, "is stored as I32"),
]  # fmt: skip


def _loaded(tmp_path: Path, source: Path) -> Plan:
    from growcockpit.plan import load_plan
    from growcockpit.plan.environment import check_environment

    return load_plan(_plan(tmp_path, source), environment=check_environment)


def test_the_true_source_weights_fit(tmp_path: Path, source: Path) -> None:
    from growcockpit.backend.state.source_weights import check_source_weights

    check_source_weights(_loaded(tmp_path, source))  # raises nothing


def test_a_missing_head_weight_starts_fresh_not_refused(tmp_path: Path, source: Path) -> None:
    from growcockpit.backend.state.source_weights import check_source_weights

    _rewrite(
        source / "model.safetensors", lambda t: t.pop("cls.predictions.transform.dense.weight")
    )
    check_source_weights(_loaded(tmp_path, source))  # a head may start fresh, as before


def test_a_base_model_checkout_without_the_prefix_fits(tmp_path: Path, source: Path) -> None:
    from growcockpit.backend.state.source_weights import check_source_weights

    def strip(t: dict[str, object]) -> None:
        for name in [n for n in t if n.startswith("bert.")]:
            t[name.removeprefix("bert.")] = t.pop(name)

    _rewrite(source / "model.safetensors", strip)
    check_source_weights(_loaded(tmp_path, source))


@pytest.mark.parametrize(
    ("lie", "said"), [c[1:] for c in WEIGHT_LIES], ids=[c[0] for c in WEIGHT_LIES]
)
def test_weights_that_lie_about_the_config_are_named(
    tmp_path: Path, source: Path, lie: object, said: str
) -> None:
    from growcockpit.backend.state.source_weights import SourceWeightsError, check_source_weights

    _rewrite(source / "model.safetensors", lie)
    plan = _loaded(tmp_path, source)  # the header is self-consistent: the plan layer passes it
    with pytest.raises(SourceWeightsError) as err:
        check_source_weights(plan)
    assert "\n" not in str(err.value) and said in str(err.value), err.value
    assert "model.safetensors" in str(err.value) or str(source) in str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize("lie", [_wider_embedding, _missing_layer_weight], ids=["wider", "missing"])
def test_train_refuses_lying_weights_before_the_run_directory_exists(
    tmp_path: Path, source: Path, gc_cache: Path, lie: object
) -> None:
    _rewrite(source / "model.safetensors", lie)
    plan = _plan(tmp_path, source)
    run = tmp_path / "runs" / "r"
    for extra in ([], ["--detach"]):
        res = growcockpit(
            "train", str(plan), "--run-dir", str(run), *extra, cache=gc_cache, timeout=TIMEOUT
        )
        assert res.returncode == 2, res.stdout + res.stderr
        assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1, res.stderr
        assert "model.init_from" in res.stderr and "config.json" in res.stderr, res.stderr
    assert not run.exists() and not (tmp_path / "runs").exists()
