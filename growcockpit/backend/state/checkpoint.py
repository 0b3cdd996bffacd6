"""Checkpoints: everything needed to continue a run exactly where it stopped.

Each checkpoint is a directory `checkpoints/step-N/` written under a temporary
name and renamed into place, so a crash mid-write never leaves a checkpoint
that looks complete but is not. A state with a non-finite loss or tensor is
never written (and so never prunes a good checkpoint): the last finite
checkpoint is what a rollback or resume needs after a blow-up. Checkpoints
hold the weights, so they get the final model's mode: files 0600, directories
0700; a link or special file planted where one goes is refused (`safe_fs`).
"""

from __future__ import annotations

import errno
import math
import os
import pickle
import random
import shutil
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from growcockpit.backend.state.checkpoint_cap import cap_problem
from growcockpit.backend.state.checkpoint_dirs import SHARDS_DIR
from growcockpit.backend.state.finite_scan import first_non_finite
from growcockpit.metrics.cuda import cuda_initialized
from growcockpit.plan.types import Plan
from growcockpit.protocol import safe_fs


@dataclass
class TrainerPosition:
    """Where in the plan the run is; restored verbatim on resume."""

    stage_index: int = 0
    step: int = 0
    step_in_stage: int = 0
    tokens: int = 0
    lr_scale: float = 1.0
    stage_entered: bool = False
    gated_layers: list[int] = field(default_factory=list)  # ramp_steps: the stage's gated blocks
    plateau: dict[str, Any] | None = None  # advance = "plateau": the trigger's state
    enter_reason: str = "init"  # why the next stage to enter begins (stage_started.reason)
    cpu_threads: int = 0  # torch's intra-op threads: CPU kernels round differently with another
    plan: dict[str, Any] = field(default_factory=dict)


class NonFiniteState(Exception):
    """The state to checkpoint holds NaN/inf (in the loss or a tensor); nothing was written."""


class DiskFull(OSError):
    """A write failed for lack of space; the message is the one line the user sees."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(
            errno.ENOSPC,
            f"no space left on device writing {path}; free space and `growcockpit resume`",
        )
        self.path = str(path)

    def __str__(self) -> str:
        return str(self.strerror)


TMP_PREFIX = ".tmp-step-"


def save_checkpoint(
    root: Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | dict[str, Any] | None,
    position: TrainerPosition,
    keep: int,
    levels: list[dict[str, Any]] | None = None,
    rng_ranks: list[dict[str, Any]] | None = None,
    scaler: dict[str, Any] | None = None,
    loss: float | None = None,
    staged: Path | None = None,
) -> Path:
    """`levels`: the V-cycle snapshots a later interpolate needs (config + weights each);
    `rng_ranks`: every DDP rank's generators (backend/state/rng.py); `scaler`: fp16 GradScaler state.

    `loss`: the last training loss; a non-finite one (or any non-finite
    weight or optimizer moment) raises NonFiniteState before anything is
    written. A failed write leaves no partial directory behind.

    `staged`: a temporary directory (`stage_dir`) whose `shards/` already holds the weights
    and optimizer, written by every FSDP rank (backend/state/fsdp_checkpoint.py); `state.pt`
    then holds the rest, and the whole directory becomes `step-N/` at once.
    """
    state = {
        "config": model.config.to_dict(),  # type: ignore[union-attr,operator]
        "model": {} if staged else model.state_dict(),
        "optimizer": None
        if staged
        else optimizer.state_dict()
        if isinstance(optimizer, torch.optim.Optimizer)
        else optimizer,
        "shards": SHARDS_DIR if staged else None,
        "position": asdict(position),
        "levels": levels or [],
        "rng": {
            "torch": torch.get_rng_state(),
            "python": random.getstate(),
            "cuda": torch.cuda.get_rng_state() if cuda_initialized() else None,
            "ranks": rng_ranks or [],
        },
        "scaler": scaler,
    }
    problem = non_finite_problem(state, loss)
    if problem:
        if staged is not None:
            shutil.rmtree(staged, ignore_errors=True)
        raise NonFiniteState(problem)
    final = root / f"step-{position.step}"
    tmp: Path | None = staged
    try:
        if tmp is None:
            tmp = stage_dir(root, position.step)
        torch.save(state, tmp / "state.pt")
        os.chmod(tmp / "state.pt", safe_fs.FILE_MODE)  # the final model's mode: the owner's alone
        safe_fs.remove_tree(final)
        os.replace(tmp, final)
    except BaseException as exc:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if is_disk_full(exc, root):
            raise DiskFull((tmp or root) / "state.pt") from None
        raise
    _prune(root, keep)
    return final


def stage_dir(root: Path, step: int) -> Path:
    """A fresh 0700 temporary directory under `root` for checkpoint `step`: nothing planted
    can be inside it; a crash leaves it to `remove_partial`."""
    root.parent.mkdir(parents=True, exist_ok=True)
    safe_fs.make_dir(root)  # a planted link or file here is refused (UnsafePath)
    return safe_fs.make_temp_dir(root, f"{TMP_PREFIX}{step}-")


def non_finite_problem(state: dict[str, Any], loss: float | None) -> str:
    """What is non-finite in a checkpoint state ("" when everything is finite)."""
    if loss is not None and not math.isfinite(loss):
        return f"the last loss is {loss}"
    model: dict[str, torch.Tensor] = state["model"]
    slots = (state["optimizer"] or {}).get("state", {})
    named = [(f"weight {name}", t) for name, t in model.items()]
    named += [
        (f"optimizer state {slot} of parameter {index}", t)
        for index, by_slot in slots.items()
        for slot, t in by_slot.items()
    ]
    culprit = first_non_finite(named)  # one read for all (backend/state/finite_scan.py)
    return f"{culprit} is not finite" if culprit else ""


def is_disk_full(exc: BaseException, where: Path) -> bool:
    """ENOSPC, or torch's zip writer failing ("unexpected pos") on an almost full disk."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc)
    if "No space left on device" in text:
        return True
    if isinstance(exc, RuntimeError) and ("unexpected pos" in text or "write failed" in text):
        try:
            return shutil.disk_usage(where).free < 64 << 20
        except OSError:
            return False
    return False


def remove_partial(root: Path) -> list[Path]:
    """Delete `.tmp-step-*` directories a crash, a kill or a full disk left behind."""
    removed = []
    for tmp in sorted(root.glob(f"{TMP_PREFIX}*")) if root.is_dir() else []:
        shutil.rmtree(tmp, ignore_errors=True)
        removed.append(tmp)
    return removed


def _prune(root: Path, keep: int) -> None:
    if keep <= 0:
        return
    done = sorted(  # a planted link is not ours to prune (rmtree refuses links anyway)
        (
            p
            for p in root.glob("step-*")
            if p.is_dir() and not p.is_symlink() and p.name[5:].isdigit()
        ),
        key=lambda p: int(p.name[5:]),
    )
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


class CheckpointError(Exception):
    """A checkpoint that cannot be used; the message names the file and what to do."""


def load_checkpoint(path: Path, mmap: bool = False, *, plan: Plan | None = None) -> dict[str, Any]:
    """Load `path/state.pt` as data only; with `plan`, a file larger than any checkpoint
    of that plan's model could be is refused before a byte of it is read (checkpoint_cap.py).

    `weights_only=True` refuses any pickle that would build objects other than
    tensors and plain containers, so a checkpoint copied from someone else can
    never run code on `resume`. Everything `save_checkpoint` writes (state
    dicts, plan dict, RNG states as tensors and tuples of ints) is such data.
    `mmap=True` checks a checkpoint cheaply before a run directory is touched.
    """
    file = path / "state.pt"
    try:
        safe_fs.check_file(file)  # a FIFO would block torch.load, a link read elsewhere
    except safe_fs.UnsafePath as exc:
        raise CheckpointError(str(exc)) from None
    if plan is not None and os.path.lexists(file):
        too_big = cap_problem(os.lstat(file).st_size, plan)
        if too_big is not None:
            raise CheckpointError(f"{file}: {too_big}")
    try:
        state = torch.load(file, map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError:
        raise CheckpointError(
            f"{file}: refused to load: it holds objects other than tensors and plain data "
            "(a checkpoint not written by growcockpit, possibly hostile); "
            "resume from a checkpoint this tool wrote, or delete this one"
        ) from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError) as exc:
        if mmap and "mmap" in str(exc):  # torch's older, non-zip format: check it the slow way
            return load_checkpoint(path, mmap=False, plan=plan)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CheckpointError(
            f"{file}: cannot be read ({reason}); resume from an earlier checkpoint"
        ) from None
    if not isinstance(state, dict) or not {"config", "model", "position", "rng"} <= state.keys():
        raise CheckpointError(
            f"{file}: not a growcockpit checkpoint (missing its config, model, position or rng); "
            "resume from a checkpoint this tool wrote"
        )
    return state
