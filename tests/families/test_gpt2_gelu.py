"""GPT-2 models the product builds use the fused tanh GELU (one kernel, not HF's eight-op
"gelu_new"), which is the same function: the logits agree to float rounding, and the
setting travels in the config, so a saved model loads with from_pretrained unchanged."""

from __future__ import annotations

from pathlib import Path

import torch
from grow_fixtures import tiny_model
from transformers import GPT2LMHeadModel
from transformers.activations import NewGELUActivation


def test_a_built_gpt2_uses_the_fused_tanh_gelu_with_the_same_logits(tmp_path: Path) -> None:
    model = tiny_model("gpt2", layers=2).eval()
    assert model.config.activation_function == "gelu_pytorch_tanh"
    ids = torch.randint(0, 61, (2, 12))
    with torch.no_grad():
        fused = model(input_ids=ids).logits
        for block in model.transformer.h:
            block.mlp.act = NewGELUActivation()
        eager = model(input_ids=ids).logits
    torch.testing.assert_close(fused, eager, atol=1e-5, rtol=1e-5)
    model.save_pretrained(tmp_path)
    loaded = GPT2LMHeadModel.from_pretrained(tmp_path).eval()
    assert loaded.config.activation_function == "gelu_pytorch_tanh"
    with torch.no_grad():
        torch.testing.assert_close(loaded(input_ids=ids).logits, eager, atol=1e-5, rtol=1e-5)
