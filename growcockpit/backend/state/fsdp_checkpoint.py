"""Sharded checkpoints under FSDP: every rank writes its own shards with
`torch.distributed.checkpoint` (DCP), so no rank gathers the whole model or optimizer to
checkpoint it.

A checkpoint stays one `checkpoints/step-N/` directory, found, listed, rolled back to and
pruned as any other: `state.pt` holds the run's own state (config, plan position, every
rank's RNG, V-cycle snapshots) and `shards/` the weights and optimizer moments as DCP
wrote them (`__<rank>_0.distcp` per rank, `.metadata` the index). The ranks write into
rank 0's temporary directory, which becomes `step-N/` only after every shard and
`state.pt` are in it. DCP reshards on load, so the checkpoint resumes at any world size,
and on one process without FSDP (the same parameter names either way).

Loading is guarded as `state.pt` is: DCP unpickles `.metadata` and the non-tensor values
(the optimizer's hyperparameters) with plain `pickle`, which runs code from a crafted
file; here the index goes through backend/state/shard_checks.py (checked there before
anything is read) and every value through `weights_only` loading.
"""

from __future__ import annotations

import io
import math
import os
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.distributed.checkpoint import metadata as dcp_metadata
from torch.distributed.checkpoint._traverse import set_element
from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner
from torch.distributed.checkpoint.filesystem import FileSystemReader, FileSystemWriter
from torch.distributed.checkpoint.metadata import Metadata
from torch.distributed.checkpoint.planner import ReadItem
from torch.distributed.checkpoint.state_dict import (
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.checkpoint.state_dict_loader import load
from torch.distributed.checkpoint.state_dict_saver import save
from torch.distributed.tensor import DTensor

from growcockpit.backend.parallel.distributed import DistContext
from growcockpit.backend.state.checkpoint import NonFiniteState, stage_dir
from growcockpit.backend.state.checkpoint_dirs import SHARDS_DIR
from growcockpit.backend.state.checkpointing import ShardStager
from growcockpit.backend.state.finite_scan import first_non_finite
from growcockpit.backend.state.shard_checks import MODEL, OPTIM, has_optimizer, read_index
from growcockpit.backend.state.state_checks import brief, refusal
from growcockpit.protocol import safe_fs

_ONE_PROCESS = "torch.distributed is disabled"  # DCP's note on one process: what we meant


def sharded_state(model: nn.Module, optimizer: torch.optim.Optimizer | None) -> dict[str, Any]:
    """The model's (and optimizer's) state keyed by parameter name; under FSDP each value
    is this rank's shard (a DTensor), on one process a whole tensor."""
    state: dict[str, Any] = {MODEL: get_model_state_dict(model)}
    if optimizer is not None:
        state[OPTIM] = get_optimizer_state_dict(model, optimizer)
    return state


def shard_stager(
    model: nn.Module, optimizer: torch.optim.Optimizer | None, loss: float | None, ctx: DistContext
) -> ShardStager:
    """What `write_checkpoint` calls to have every rank write its shards (`stage_shards`)."""
    return lambda root, step: stage_shards(root, step, model, optimizer, loss, ctx)


def stage_shards(
    root: Path,
    step: int,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None,
    loss: float | None,
    ctx: DistContext,
) -> Path | None:
    """Every rank writes its shards into rank 0's fresh temporary directory (a collective);
    that directory on rank 0, None on the others. NonFiniteState on every rank, with
    nothing written, when any rank's shard (or the loss) is not finite."""
    state = sharded_state(model, optimizer)
    problems = ctx.all_gather_objects(_local_non_finite(state, loss))
    problem = next((p for p in problems if p), "")
    if problem:
        raise NonFiniteState(problem)
    tmp = stage_dir(root, step) if ctx.is_main else None
    where = Path(ctx.broadcast([str(tmp)], 1)[0])
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_ONE_PROCESS)
            save(state, storage_writer=FileSystemWriter(where / SHARDS_DIR))
    except BaseException:
        if tmp is not None:
            safe_fs.remove_tree(tmp)
        raise
    if tmp is None:
        return None
    os.chmod(tmp / SHARDS_DIR, safe_fs.DIR_MODE)
    for file in (tmp / SHARDS_DIR).iterdir():  # DCP writes with the umask's mode
        os.chmod(file, safe_fs.FILE_MODE)
    return tmp


def _local_non_finite(state: dict[str, Any], loss: float | None) -> str:
    """What in this rank's shards (or the loss) is NaN or inf, "" when all is finite."""
    if loss is not None and not math.isfinite(loss):
        return f"the last loss is {loss}"
    named = [(f"weight {k}", _local(v)) for k, v in state.get(MODEL, {}).items()]
    slots = state.get(OPTIM, {}).get("state", {})
    named += [
        (f"optimizer state {slot} of {name}", _local(t))
        for name, by_slot in slots.items()
        for slot, t in by_slot.items()
        if isinstance(t, torch.Tensor)
    ]
    culprit = first_non_finite(named)
    return f"{culprit} is not finite" if culprit else ""


def _local(value: torch.Tensor) -> torch.Tensor:
    return value.to_local() if isinstance(value, DTensor) else value


# ---- reading ------------------------------------------------------------------------


class _SafeReader(FileSystemReader):
    """DCP's file reader with the index read through `_IndexUnpickler`."""

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        index = read_index(Path(self.path))
        meta = index.storage_meta or dcp_metadata.StorageMeta()
        meta.load_id = self.load_id
        index.storage_meta = meta
        return index


class _SafePlanner(DefaultLoadPlanner):
    """DCP's planner with non-tensor values read as data only (`weights_only`)."""

    def load_bytes(self, read_item: ReadItem, value: io.BytesIO) -> None:
        loaded = torch.load(value, weights_only=True)
        if self.flatten_state_dict:
            set_element(self.original_state_dict, self.mappings[read_item.dest_index.fqn], loaded)
        else:
            self.state_dict[read_item.dest_index.fqn] = loaded


def load_sharded_weights(path: Path, model: nn.Module, ctx: DistContext) -> None:
    """Read the weights of `path/shards/` into the plain `model` a restore builds before it
    is sharded again (every rank reads all of them, whatever world size wrote them), so
    non-finite weights are refused before the trainer changes."""
    state = {MODEL: get_model_state_dict(model)}
    _read(path, state, ctx)
    set_model_state_dict(model, state[MODEL])


def load_sharded_optimizer(
    path: Path, model: nn.Module, optimizer: torch.optim.Optimizer, ctx: DistContext
) -> None:
    """Read the optimizer of `path/shards/` into `optimizer` over the (sharded) `model`:
    under FSDP each rank reads only its own shards. A checkpoint without one (taken at a
    stage start) leaves the optimizer fresh, as that stage start did."""
    if not has_optimizer(path):
        return
    state = {OPTIM: get_optimizer_state_dict(model, optimizer)}
    _read(path, state, ctx)
    set_optimizer_state_dict(model, optimizer, state[OPTIM])


def _read(path: Path, state: dict[str, Any], ctx: DistContext) -> None:
    """DCP's load of `state` from `path/shards/` (a collective under FSDP), then every rank
    checks what it read is finite and the ranks agree: CheckpointError otherwise."""
    shards = path / SHARDS_DIR
    read_index(shards)  # a crafted or damaged index: refused here in one line
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_ONE_PROCESS)
            load(state, storage_reader=_SafeReader(shards), planner=_SafePlanner())
    except Exception as exc:
        raise refusal(shards, f"cannot be loaded ({brief(exc)})") from None
    problems = ctx.all_gather_objects(_local_non_finite(state, None))
    problem = next((p for p in problems if p), "")
    if problem:
        raise refusal(shards, f"{problem} (NaN or inf)")
