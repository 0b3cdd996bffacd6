"""A sharded checkpoint's index (`step-N/shards/.metadata`), read safely and checked.

DCP unpickles its index with plain `pickle`, which runs code from a crafted file; here it
goes through an unpickler that builds only DCP's own metadata classes, torch sizes,
dtypes, layouts and paths. The index is then checked against the model the saved config
builds (names, shapes, dtypes), and the shards' total size against the run's cap, before
a byte of weights is read (backend/state/fsdp_checkpoint.py reads them).
"""

from __future__ import annotations

import os
import pathlib
import pickle
from pathlib import Path
from typing import Any

import torch
from torch.distributed.checkpoint import filesystem as dcp_filesystem
from torch.distributed.checkpoint import metadata as dcp_metadata
from torch.distributed.checkpoint.metadata import Metadata, TensorStorageMetadata

from growcockpit.backend.state.checkpoint import CheckpointError
from growcockpit.backend.state.checkpoint_cap import cap_problem
from growcockpit.backend.state.checkpoint_dirs import SHARDS_DIR
from growcockpit.backend.state.state_checks import brief, refusal
from growcockpit.plan.limits import echo
from growcockpit.plan.types import Plan
from growcockpit.protocol import safe_fs

MODEL, OPTIM = "model", "optim"
"""The two top-level keys of a sharded checkpoint's state (DCP flattens `model.<name>`)."""
MAX_INDEX_BYTES = 64 << 20
_SAFE_CALLS: dict[tuple[str, str], Any] = {
    ("torch.serialization", "_get_layout"): torch.serialization._get_layout,  # a name → layout
    ("pathlib", "PosixPath"): pathlib.PosixPath,  # where it was written (storage_meta)
    ("pathlib", "PurePosixPath"): pathlib.PurePosixPath,
}
_DCP_MODULES = {dcp_metadata.__name__: dcp_metadata, dcp_filesystem.__name__: dcp_filesystem}


class _Forbidden(pickle.UnpicklingError):
    """The index names something other than the data an index holds."""


class _IndexUnpickler(pickle.Unpickler):
    """Builds DCP's metadata classes, torch sizes, dtypes, layouts and paths; nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        if module in _DCP_MODULES:
            found = getattr(_DCP_MODULES[module], name, None)
            if isinstance(found, type) and found.__module__ == module:
                return found
        if (module, name) in _SAFE_CALLS:
            return _SAFE_CALLS[module, name]
        if module == "torch":
            found = getattr(torch, name, None)
            if found is torch.Size or isinstance(
                found, torch.dtype | torch.layout | torch.memory_format
            ):
                return found
        raise _Forbidden(f"{module}.{name} is not part of a checkpoint index")


def read_index(shards: Path) -> Metadata:
    """`shards/.metadata` as DCP's Metadata, or a one-line CheckpointError."""
    file = shards / ".metadata"
    try:
        if not safe_fs.check_dir(shards) or not safe_fs.check_file(file):
            raise CheckpointError(f"{file}: missing; resume from an earlier checkpoint")
        size = os.lstat(file).st_size
        if size > MAX_INDEX_BYTES:
            raise refusal(file, f"{size:,} bytes, over the {MAX_INDEX_BYTES:,}-byte index cap")
        with open(file, "rb") as fh:
            index = _IndexUnpickler(fh).load()
    except safe_fs.UnsafePath as exc:
        raise CheckpointError(str(exc)) from None
    except _Forbidden as exc:
        raise refusal(
            file,
            f"refused to load: {brief(exc)} (not written by growcockpit, possibly hostile)",
            "resume from a checkpoint this tool wrote, or delete this one",
        ) from None
    except CheckpointError:
        raise
    except Exception as exc:  # truncated, or damaged any other way
        raise refusal(file, f"cannot be read ({brief(exc)})") from None
    if not isinstance(index, Metadata) or not isinstance(index.state_dict_metadata, dict):
        raise refusal(file, "not a torch.distributed.checkpoint index")
    return index


def check_shards(path: Path, reference: dict[str, torch.Tensor], plan: Plan) -> None:
    """`path/shards/` holds exactly the weights `reference` (a meta model's state dict)
    names, of their shapes and dtypes, within the run's size cap; every file a regular one."""
    shards = path / SHARDS_DIR
    index = read_index(shards)
    total = 0
    try:
        for entry in shards.iterdir():
            safe_fs.check_file(entry)
            total += os.lstat(entry).st_size
    except safe_fs.UnsafePath as exc:
        raise CheckpointError(str(exc)) from None
    too_big = cap_problem(total, plan)
    if too_big is not None:
        raise CheckpointError(f"{shards}: {too_big}")
    saved = {
        key[len(MODEL) + 1 :]: meta
        for key, meta in index.state_dict_metadata.items()
        if key.startswith(MODEL + ".")
    }
    where = shards / ".metadata"
    for name, ref in reference.items():
        meta = saved.get(name)
        if not isinstance(meta, TensorStorageMetadata):
            raise refusal(where, f"its weights have no tensor {echo(name)}")
        if tuple(meta.size) != tuple(ref.shape) or meta.properties.dtype != ref.dtype:
            raise refusal(
                where,
                f"its weight {name} is {tuple(meta.size)} {meta.properties.dtype}, but its "
                f"config's model has {tuple(ref.shape)} {ref.dtype}",
            )
    extra = sorted(set(saved) - set(reference))
    if extra:
        raise refusal(where, f"its weights have a tensor {echo(extra[0])} its model does not have")


def has_optimizer(path: Path) -> bool:
    """Whether the shards hold an optimizer (a stage-start checkpoint may hold none)."""
    index = read_index(path / SHARDS_DIR)
    return any(key.startswith(OPTIM + ".") for key in index.state_dict_metadata)
