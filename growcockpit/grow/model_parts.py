"""Uniform access to the parts of a registered transformers LM.

Growth operators and freeze policies work on "the embeddings", "the
transformer layers" and "the head" of a model; where those live in each
family is the family's spec (`growcockpit/families`), so the operators stay
generic.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch import nn

from growcockpit.families import spec_of


def part(model: nn.Module, dotted: str) -> Any:
    """`part(model, "bert.encoder.layer")`: submodules by path, untyped as HF models are."""
    obj: Any = model
    for name in dotted.split("."):
        obj = getattr(obj, name)
    return obj


def family_of(model: nn.Module) -> str:
    """The registered family name of a transformers model (its `model_type`)."""
    return spec_of(model).name


def get_layers(model: nn.Module) -> nn.ModuleList:
    """The ModuleList of transformer blocks, bottom first."""
    layers = part(model, spec_of(model).layers_path)
    assert isinstance(layers, nn.ModuleList)
    return layers


def set_layers(model: nn.Module, layers: list[nn.Module]) -> None:
    """Replace the blocks and keep the config's depth in step with them."""
    spec = spec_of(model)
    new = nn.ModuleList(layers)
    parent, _, attr = spec.layers_path.rpartition(".")
    setattr(part(model, parent), attr, new)
    spec.set_depth(part(model, "config"), len(new))
    for idx, layer in enumerate(new):
        _renumber(layer, idx)


def _renumber(layer: nn.Module, idx: int) -> None:
    """Attention modules remember their index (for KV caches); keep it true."""
    for module in layer.modules():
        if hasattr(module, "layer_idx"):
            setattr(module, "layer_idx", idx)  # noqa: B010 - nn.Module typing forbids the attribute form


def embedding_modules(model: nn.Module) -> list[nn.Module]:
    """Input embeddings (token, position, … and what runs between them and block 0).

    A tied LM decoder shares the token table, so freezing these freezes the
    decoder matrix too (what MSLT wants).
    """
    return spec_of(model).embedding_modules(model)


def head_parameters(model: nn.Module) -> Iterator[nn.Parameter]:
    """Head parameters that are not tied to the embeddings (BERT: the MLM transform
    and decoder bias; GPT-2: `ln_f`, since `lm_head.weight` is the tied table)."""
    embedding_ids = {id(p) for m in embedding_modules(model) for p in m.parameters()}
    head = nn.ModuleList(spec_of(model).head_modules(model))
    seen: set[int] = set()
    for p in head.parameters():
        if id(p) in embedding_ids or id(p) in seen:
            continue
        seen.add(id(p))
        yield p


def layer_parameter_names(model: nn.Module) -> list[list[str]]:
    """For each block, the fully qualified names of its parameters."""
    layers = get_layers(model)
    prefix = spec_of(model).layers_path
    return [
        [f"{prefix}.{i}.{n}" for n, _ in layer.named_parameters()] for i, layer in enumerate(layers)
    ]
