"""The run's plan.toml, checked against its checkpoint and the machine before a resume builds anything.

`check_state` proves a checkpoint agrees with the plan saved *inside* it, but a
resume builds its model from the run directory's `plan.toml`, which anyone can
edit: one that says `hidden_size = 65536` next to a hidden-32 checkpoint made the
backend allocate 17 GB and mark the run crashed. So before the model exists:

- the shape `plan.toml` gives at the checkpoint's position must be the shape the
  checkpoint holds (its config, already checked against its tensors' shapes, which
  are read from the memory-mapped state dict without loading the tensors);
- the memory the plan's largest stage certainly allocates on one rank (weights, gradients
  and optimizer moments, plan/memory.py) must fit the machine that would run it.

A refusal is a CheckpointError: one line, and status.json is left as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

from growcockpit.backend.state.checkpoint import CheckpointError
from growcockpit.backend.state.checkpoint_checks import CheckedState, expected_shape
from growcockpit.plan.memory import plan_memory, size
from growcockpit.plan.types import Plan

FIX = "put back the plan the run trained with, or train a new run with `growcockpit train`"


def _shape_text(shape: tuple[int, int, int, int]) -> str:
    layers, hidden, heads, ffn = shape
    return f"{layers} layers × hidden {hidden} ({heads} heads, FFN {ffn})"


def check_resume_shape(plan: Plan, checked: CheckedState, ckpt: Path, plan_file: Path) -> None:
    """`plan` (the run's plan.toml) builds, at the checkpoint's position, the checkpoint's model."""
    pos = checked.pos
    where = f"at stage {pos.stage_index + 1}"
    if pos.stage_index >= len(plan.stages):
        raise CheckpointError(
            f"{plan_file}: has {len(plan.stages)} stage(s) but checkpoint {ckpt.name} is "
            f"{where}; {FIX}"
        )
    trains, holds = plan.model.family, checked.plan.model.family
    if trains != holds:  # two plans' families, compared as names: no family knowledge here
        raise CheckpointError(
            f"{plan_file}: trains {trains} but checkpoint {ckpt.name} holds a {holds} model; {FIX}"
        )
    held = expected_shape(checked.plan, pos)
    built = expected_shape(plan, pos)
    if built != held:
        raise CheckpointError(
            f"{plan_file}: says {_shape_text(built)} {where}, but checkpoint {ckpt.name} holds "
            f"{_shape_text(held)}; {FIX}"
        )


def machine_bytes(device: str | None) -> tuple[float, str] | None:
    """The memory the run's device has, and its name (None when it cannot be told)."""
    import torch

    want_cuda = device.startswith("cuda") if device else torch.cuda.is_available()
    if want_cuda and torch.cuda.is_available():
        index = torch.device(device).index if device and ":" in device else None
        props = torch.cuda.get_device_properties(index or 0)
        return float(props.total_memory), f"GPU {props.name}"
    if device and not device.startswith("cpu"):
        return None  # mps, xpu: no reliable total to compare with
    try:
        import psutil

        return float(psutil.virtual_memory().total), "this machine's memory"
    except (ImportError, OSError):
        return None


def check_resume_memory(plan: Plan, device: str | None, plan_file: Path) -> None:
    """The plan's largest stage's weights, gradients and optimizer state (plan/memory.py, one
    rank) fit the device."""
    have = machine_bytes(device)
    if have is None:
        return
    total, what = have
    ranks = int(os.environ.get("WORLD_SIZE", "1") or 1)
    stages = plan_memory(plan, ranks)
    if not stages:
        return
    # weights, gradients and optimizer moments are allocated for certain (exact arithmetic);
    # the activation estimate is not held against a resume of a run that trained before
    largest = max(stages, key=lambda s: s.state)
    if largest.state > total:
        raise CheckpointError(
            f"{plan_file}: stage {largest.index + 1} ({largest.name}) needs about "
            f"{size(largest.state)} per rank for its weights, gradients and optimizer state "
            f"alone, but {what} is {size(total)}; {FIX}"
        )
