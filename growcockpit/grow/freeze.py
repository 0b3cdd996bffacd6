"""Freeze policies: which parameters get gradients in a stage.

The policy only sets `requires_grad`; running the frozen bottom under
`torch.no_grad()` (so it does no backward and keeps no activations) is the
forward's job, see `backend.forward.StagedForward`.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from growcockpit.grow.model_parts import embedding_modules, get_layers, head_parameters


@dataclass
class FreezeResult:
    trainable_layers: list[int]
    embeddings_trainable: bool
    head_trainable: bool
    trainable_params: list[nn.Parameter]


def apply_freeze(
    model: nn.Module,
    trainable_layers: list[int],
    embeddings: bool,
    head: bool,
) -> FreezeResult:
    """Set requires_grad on exactly the chosen layers, embeddings and head."""
    for p in model.parameters():
        p.requires_grad_(False)
    layers = get_layers(model)
    for idx in trainable_layers:
        for p in layers[idx].parameters():
            p.requires_grad_(True)
    if embeddings:
        for module in embedding_modules(model):
            for p in module.parameters():
                p.requires_grad_(True)
    if head:
        for p in head_parameters(model):
            p.requires_grad_(True)
    params = [p for p in model.parameters() if p.requires_grad]
    return FreezeResult(sorted(trainable_layers), embeddings, head, params)


def set_train_modes(model: nn.Module) -> None:
    """Train mode, except frozen layers and embeddings: fixed feature extractors, no dropout noise."""
    model.train()
    for layer in get_layers(model):
        if not any(p.requires_grad for p in layer.parameters()):
            layer.eval()
    for module in embedding_modules(model):
        if not any(p.requires_grad for p in module.parameters()):
            module.eval()
