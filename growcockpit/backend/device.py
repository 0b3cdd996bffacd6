"""Make a requested device the current one, and turn on the fast math it supports.

Every entry point (the backend, calibration, the GPU check) calls
`prepare_device` once: without `torch.cuda.set_device`, `--device cuda:1`
leaves the current device at 0, so CUDA events, `empty_cache` and
stream-ordered reads land on the wrong GPU. TF32 matmuls are on for Ampere
and newer (compute capability ≥ 8.0), where they cost a few mantissa bits of
fp32 matmuls and nothing else; bf16 autocast (`precision = "auto"`) is
unaffected.
"""

from __future__ import annotations

import gc

import torch

TF32_MIN_CAPABILITY = (8, 0)


def prepare_device(device: torch.device) -> torch.device:
    """`device` with an explicit index on CUDA, made current, TF32 enabled where supported."""
    if device.type != "cuda":
        return device
    if device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    torch.cuda.set_device(device)
    if torch.cuda.get_device_capability(device) >= TF32_MIN_CAPABILITY:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return device


def release_cached_memory(device: torch.device) -> int:
    """Return the allocator's unused cached blocks to the driver; bytes freed (0 off CUDA).

    `gc.collect()` first: the replaced model and optimizer may sit in reference
    cycles (hooks, closures, autograd graphs) whose tensors the allocator still
    counts as in use until the cycle collector runs, so `empty_cache` alone
    would free nothing of them.
    """
    if device.type != "cuda":
        return 0
    gc.collect()
    before = torch.cuda.memory_reserved(device)
    torch.cuda.empty_cache()
    return max(0, before - torch.cuda.memory_reserved(device))
