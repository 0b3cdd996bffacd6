"""Typed fronts for the two `torch.cuda` calls that torch leaves unannotated.

One place for the casts, so that the step timer, the layer timer, the
calibration and the checkpoint code stay checked by mypy --strict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import torch


def timing_event() -> torch.cuda.Event:
    """A CUDA event that records time (`elapsed_time` between two of them)."""
    make = cast(Callable[..., torch.cuda.Event], torch.cuda.Event)
    return make(enable_timing=True)


def cuda_initialized() -> bool:
    """Whether this process has already initialised CUDA (asking does not initialise it)."""
    return cast(Callable[[], bool], torch.cuda.is_initialized)()
