"""The run's numeric precision: what "auto" resolves to, and the autocast around the model.

Out of backend/loop/step.py so that calibration, benchmarks and evaluation share
the step's choice without the step itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

AMP_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_precision(requested: str, device: torch.device) -> str:
    """ "auto": bf16 autocast on a GPU with native bf16 (Ampere and newer), fp32 elsewhere.

    Not `torch.cuda.is_bf16_supported()`: it also says yes where bf16 is only
    emulated (Volta, Turing), which is slower than fp32 there.
    """
    if requested != "auto":
        return requested
    if device.type == "cuda" and torch.cuda.get_device_capability(device) >= (8, 0):
        return "bf16"
    return "fp32"


@contextlib.contextmanager
def autocast(precision: str, device: torch.device) -> Iterator[None]:
    """The run's mixed precision (training, evaluation and loss probes alike)."""
    dtype = AMP_DTYPES.get(precision)
    if dtype is None:
        yield
        return
    with torch.autocast(device.type, dtype=dtype):
        yield
