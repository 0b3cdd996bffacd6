"""An `init_from` source whose weights are a pickle is refused by `plan validate` in one line.

A real tiny BERT's state dict is saved with `torch.save` as `pytorch_model.bin`;
validation names the file, says only safetensors weights are accepted and how to
convert, and never opens the pickle. The same model saved as safetensors passes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from repo_paths import TINY_TOML

from growcockpit.cli import main
from growcockpit.plan.init_from import SourceError, read_source


def _save(tmp_path: Path, safe: bool) -> Path:
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(
        vocab_size=2000,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    out = tmp_path / ("safe" if safe else "pickled")
    model = BertForMaskedLM(config)
    model.save_pretrained(out)
    if not safe:  # what older transformers wrote by default: the state dict, pickled
        import torch

        for file in out.glob("*.safetensors"):
            file.unlink()
        torch.save(model.state_dict(), out / "pytorch_model.bin")
    return out


def _plan(tmp_path: Path, source: Path) -> Path:
    text = TINY_TOML.read_text().replace("[model]\n", f'[model]\ninit_from = "{source}"\n', 1)
    path = tmp_path / "plan.toml"
    path.write_text(text)
    return path


def test_a_pickled_source_is_refused_at_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _save(tmp_path, safe=False)
    assert (source / "pytorch_model.bin").is_file()
    assert not list(source.glob("*.safetensors"))
    os.chmod(source / "pytorch_model.bin", 0)  # never opened: its name is enough
    try:
        with pytest.raises(SourceError, match="pytorch_model.bin .a pickle"):
            read_source(str(source))
        assert main(["plan", "validate", str(_plan(tmp_path, source))]) != 0
    finally:
        os.chmod(source / "pytorch_model.bin", 0o600)
    out = capsys.readouterr()
    said = out.out + out.err
    assert "Traceback" not in said
    [line] = [ln for ln in said.splitlines() if "pytorch_model.bin" in ln]
    assert "only safetensors weights are accepted" in line and "safe_serialization=True" in line


def test_the_same_model_as_safetensors_passes(tmp_path: Path) -> None:
    source = _save(tmp_path, safe=True)
    (source / "old.bin").write_bytes(b"a pickle left beside safetensors weights is not read")
    assert read_source(str(source)).hidden_size == 32
