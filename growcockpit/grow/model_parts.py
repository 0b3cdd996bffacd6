"""Uniform access to the parts of a Hugging Face BERT or GPT-2 LM.

Growth operators and freeze policies work on "the embeddings", "the
transformer layers" and "the head" of a model; this module is the one place
that knows where those live in each family, so the operators stay generic.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from torch import nn

Family = Literal["bert", "gpt2"]


def part(model: nn.Module, dotted: str) -> Any:
    """`part(model, "bert.encoder.layer")`: submodules by path, untyped as HF models are."""
    obj: Any = model
    for name in dotted.split("."):
        obj = getattr(obj, name)
    return obj


def family_of(model: nn.Module) -> Family:
    model_type = getattr(getattr(model, "config", None), "model_type", "")
    if model_type == "bert":
        return "bert"
    if model_type == "gpt2":
        return "gpt2"
    raise TypeError(f"unsupported model type {model_type!r}: growcockpit handles bert and gpt2")


def get_layers(model: nn.Module) -> nn.ModuleList:
    """The ModuleList of transformer blocks, bottom first."""
    layers = part(model, "bert.encoder.layer" if family_of(model) == "bert" else "transformer.h")
    assert isinstance(layers, nn.ModuleList)
    return layers


def set_layers(model: nn.Module, layers: list[nn.Module]) -> None:
    """Replace the blocks and keep the config's depth in step with them."""
    new = nn.ModuleList(layers)
    config = part(model, "config")
    if family_of(model) == "bert":
        part(model, "bert.encoder").layer = new
        config.num_hidden_layers = len(new)
    else:
        part(model, "transformer").h = new
        config.n_layer = len(new)
        config.num_hidden_layers = len(new)
    for idx, layer in enumerate(new):
        _renumber(layer, idx)


def _renumber(layer: nn.Module, idx: int) -> None:
    """Attention modules remember their index (for KV caches); keep it true."""
    for module in layer.modules():
        if hasattr(module, "layer_idx"):
            setattr(module, "layer_idx", idx)  # noqa: B010 - nn.Module typing forbids the attribute form


def embedding_modules(model: nn.Module) -> list[nn.Module]:
    """Input embeddings (token, position, token-type, BERT's embedding LayerNorm, the dropout after them).

    The LM decoder weight is tied to the token embedding, so freezing these
    freezes the decoder matrix too (methods.md: what MSLT wants).
    """
    if family_of(model) == "bert":
        return [part(model, "bert.embeddings")]
    return [
        part(model, "transformer.wte"),
        part(model, "transformer.wpe"),
        part(model, "transformer.drop"),
    ]


def head_parameters(model: nn.Module) -> Iterator[nn.Parameter]:
    """Head parameters that are not tied to the embeddings.

    BERT: the MLM transform (dense + LayerNorm) and the decoder bias.
    GPT-2: the final LayerNorm (`ln_f`); `lm_head.weight` is the tied embedding.
    """
    embedding_ids = {id(p) for m in embedding_modules(model) for p in m.parameters()}
    if family_of(model) == "bert":
        head: nn.Module = part(model, "cls")
    else:
        head = nn.ModuleList([part(model, "transformer.ln_f"), part(model, "lm_head")])
    seen: set[int] = set()
    for p in head.parameters():
        if id(p) in embedding_ids or id(p) in seen:
            continue
        seen.add(id(p))
        yield p


def layer_parameter_names(model: nn.Module) -> list[list[str]]:
    """For each block, the fully qualified names of its parameters."""
    layers = get_layers(model)
    prefix = "bert.encoder.layer" if family_of(model) == "bert" else "transformer.h"
    return [
        [f"{prefix}.{i}.{n}" for n, _ in layer.named_parameters()] for i, layer in enumerate(layers)
    ]
