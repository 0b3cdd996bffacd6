"""How a tracked loop saves itself when `checkpoint` or `stop` asks, unless the user says how."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

# the user's save function: writes a checkpoint into the (new, empty) directory it is given
SaveFn = Callable[[Path], object]


def default_save(model: nn.Module, optimizer: torch.optim.Optimizer | None) -> SaveFn:
    """`save_pretrained` for a transformers model (`from_pretrained` loads it), else the
    model's state dict in `model.pt`; the optimizer's state dict in `optimizer.pt`."""

    def save(folder: Path) -> None:
        pretrained = getattr(model, "save_pretrained", None)
        if callable(pretrained):
            pretrained(str(folder))
        else:
            torch.save(model.state_dict(), folder / "model.pt")
        if optimizer is not None:
            torch.save(optimizer.state_dict(), folder / "optimizer.pt")

    return save
