"""What a tracked loop logs (`cockpit.log({...})`, `cockpit.eval(val_loss=...)`), checked.

The script is the user's, and a bad value must never end it: a NaN, a string, a tensor
with many elements or a dict of thousands of keys is dropped with one warning line that
names the key and why, and the rest is kept. A validation loss under one of the names
scripts use for it (`val/loss`, `val_loss`, `eval/loss`, `eval_loss`) becomes the same
`eval` event growcockpit's engine writes, so `compare`, the pin, the `v` plots and
`export` treat a tracked run's evaluations as the engine's.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

VAL_LOSS_KEYS = ("val/loss", "val_loss", "eval/loss", "eval_loss", "validation/loss")
MAX_KEYS = 256  # per call: more is a mistake (a whole state dict), not a metric set
MAX_NAME = 120


@dataclass
class Checked:
    """The scalars kept, the validation loss found among them, and one line per drop."""

    values: dict[str, float] = field(default_factory=dict)
    val_loss: float | None = None
    problems: list[str] = field(default_factory=list)


def scalar_value(value: Any) -> tuple[float | None, str]:
    """(the value as a float, "") or (None, why it is not a loggable scalar)."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            return None, f"a tensor of {value.numel()} elements (log one number)"
        value = value.detach().float().item()
    elif hasattr(value, "item") and callable(value.item) and not isinstance(value, str):
        try:  # a numpy scalar or 1-element array
            value = value.item()
        except (ValueError, TypeError):
            return None, f"a {type(value).__name__} that is not one number"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None, f"{type(value).__name__} {str(value)[:40]!r} is not a number"
    number = float(value)
    if not math.isfinite(number):
        return None, f"{number} is not finite"
    return number, ""


def check_scalars(metrics: Any, where: str) -> Checked:
    """The loggable scalars of `metrics` (a mapping of name → number)."""
    out = Checked()
    if not isinstance(metrics, Mapping):
        out.problems.append(
            f"{where}: expects a dict of name → number, got {type(metrics).__name__}; "
            'e.g. cockpit.log({"grad_norm": 0.7})'
        )
        return out
    items = list(metrics.items())
    if len(items) > MAX_KEYS:
        out.problems.append(
            f"{where}: {len(items)} keys, only the first {MAX_KEYS} kept (log metrics, "
            "not a state dict)"
        )
        items = items[:MAX_KEYS]
    for key, raw in items:
        name = str(key)[:MAX_NAME]
        if not name.strip():
            out.problems.append(f"{where}: an empty name was dropped")
            continue
        number, why = scalar_value(raw)
        if number is None:
            out.problems.append(f"{where}: {name!r} dropped: {why}")
            continue
        if name in VAL_LOSS_KEYS and out.val_loss is None:
            out.val_loss = number
        else:
            out.values[name] = number
    return out


def perplexity(loss: float) -> float:
    return math.exp(loss) if loss < 700 else math.inf
