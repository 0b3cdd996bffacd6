"""Going back to a checkpoint: `resume` of a dead run and `rollback` of a live one.

Both restore the same thing (weights, optimizer, plan and position, RNG,
V-cycle level snapshots), so a rolled-back run continues exactly as a run
resumed from that checkpoint would. Choosing the checkpoint is careful: a
truncated latest checkpoint is skipped for the previous good one (and the
user is told), and checkpoints after the one restored are moved to
`checkpoints/rolled-back/`, so a later `resume` follows the new timeline
instead of jumping back onto the abandoned one. Choosing a checkpoint needs no
torch, so `resume` can do it before the heavy imports.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from growcockpit.backend.state.checkpoint_dirs import SHARDS_DIR, checkpoint_dirs, step_of
from growcockpit.plan.types import Plan, Stage, trainable_layer_ids
from growcockpit.protocol import safe_fs
from growcockpit.protocol.events import RolledBack
from growcockpit.protocol.rundir import RunPaths

if TYPE_CHECKING:  # torch-heavy: choosing a checkpoint must not import them
    import torch
    from torch import nn

    from growcockpit.backend.control.reporter import RunReporter
    from growcockpit.backend.dist.distributed import DistContext
    from growcockpit.backend.loop.step import StepRunner
    from growcockpit.backend.state.checkpoint import TrainerPosition
    from growcockpit.backend.state.levels import LevelSnapshot
    from growcockpit.grow import GrowResult

SET_ASIDE = "rolled-back"


class RestoreHost(Protocol):
    """The parts of a live trainer a checkpoint restores (backend/loop/engine.py's `Trainer`)."""

    pos: TrainerPosition
    plan: Plan
    levels: dict[int, LevelSnapshot]
    model: nn.Module
    optimizer: torch.optim.Optimizer | None
    device: torch.device
    dist: DistContext
    report: RunReporter
    steps: StepRunner

    def configure_training(
        self, stage: Stage, trainable: list[int], grow: GrowResult | None = None
    ) -> None: ...


class RollbackHost(RestoreHost, Protocol):
    """What a live rollback touches besides the restored state (the loop's holds, the plan)."""

    run_dir: Path
    last_loss: float | None
    waiting: bool
    advance_now: bool
    rewound: bool

    def restore(self, checkpoint_dir: Path) -> None: ...

    def replan(self, plan: Plan, from_stage: int) -> None: ...


class RestoreError(Exception):
    """No usable checkpoint; the message names the directory and what to do."""


def last_checkpoint_step(root: Path, now: int) -> int | None:
    """The newest checkpoint's step at or before `now` (what a pause's advice rolls back to)."""
    steps = [step_of(p) for p in checkpoint_dirs(root) if step_of(p) <= now]
    return max(steps, default=None)


def advised_rollback_step(root: Path, now: int, lr_raised_at: int | None) -> int | None:
    """The checkpoint a blow-up's advice names and a step-less rollback goes to: the newest
    from before the LR was last raised, when there is one (those after it were trained at the
    raised LR and may be ruined though finite), else the newest at or before `now`."""
    before = None if lr_raised_at is None else last_checkpoint_step(root, lr_raised_at)
    return before if before is not None else last_checkpoint_step(root, now)


def unreadable_reason(path: Path) -> str:
    """Why `path/state.pt` cannot be a checkpoint ("" when its archive is intact, and
    a sharded checkpoint's `shards/` has its index).

    torch writes a zip archive whose directory sits at the end, so a file cut
    short by a kill, a full disk or a bad copy fails here without being loaded.
    """
    state = path / "state.pt"
    try:
        with zipfile.ZipFile(state) as archive:
            names = archive.namelist()
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        return f"truncated or corrupt ({type(exc).__name__}: {str(exc)[:80]})"
    if not any(name.endswith("data.pkl") for name in names):
        return "not a torch checkpoint (no data.pkl inside)"
    shards = path / SHARDS_DIR
    if os.path.lexists(shards) and not os.path.isfile(shards / ".metadata"):
        return f"its {SHARDS_DIR}/ has no .metadata index: cut short or damaged"
    return ""


def pick_checkpoint(root: Path, step: int | None = None) -> tuple[Path, list[str]]:
    """The checkpoint to restore, and one note per newer checkpoint skipped as unreadable.

    `step` None: the newest readable checkpoint. Otherwise exactly `step-N`.
    """
    dirs = checkpoint_dirs(root)
    available = ", ".join(p.name for p in dirs[-8:]) or "none"
    if step is not None:
        wanted = [p for p in dirs if step_of(p) == step]
        if not wanted:
            raise RestoreError(f"{root}/step-{step}: no such checkpoint; available: {available}")
        reason = unreadable_reason(wanted[0])
        if reason:
            raise RestoreError(
                f"{wanted[0]}/state.pt: {reason}; pick another checkpoint (available: {available})"
            )
        return wanted[0], []
    notes: list[str] = []
    for path in reversed(dirs):
        reason = unreadable_reason(path)
        if not reason:
            return path, notes
        notes.append(f"{path.name} is unusable ({reason}): skipped")
    raise RestoreError(
        f"{root}: no usable checkpoint"
        + (f" ({len(notes)} unreadable)" if notes else "")
        + "; start a new run with `growcockpit train`"
    )


def set_aside_later(root: Path, step: int) -> list[Path]:
    """Move checkpoints newer than `step` to `checkpoints/rolled-back/` (nothing is deleted)."""
    moved = []
    aside = root / SET_ASIDE
    for path in checkpoint_dirs(root):
        if step_of(path) <= step:
            continue
        safe_fs.make_dir(aside)
        target = aside / path.name
        safe_fs.remove_tree(target)  # a link there is refused, never followed
        os.replace(path, target)
        moved.append(target)
    return moved


def restore_trainer(trainer: RestoreHost, checkpoint_dir: Path) -> None:
    """Continue from a checkpoint: same weights, optimizer, plan position and RNG.

    Every part is checked (backend/state/checkpoint_checks.py) and the new model and
    optimizer state are matched before the trainer changes, so a refused
    checkpoint (CheckpointError) leaves a live run exactly as it was.
    """
    from growcockpit.backend.dist.fsdp import load_optimizer_state
    from growcockpit.backend.model import model_from_saved
    from growcockpit.backend.state import rng
    from growcockpit.backend.state.checkpoint import load_checkpoint
    from growcockpit.backend.state.checkpoint_checks import check_state
    from growcockpit.backend.state.fsdp_checkpoint import (
        load_sharded_optimizer,
        load_sharded_weights,
    )
    from growcockpit.backend.state.levels import levels_from_saved, open_levels_at
    from growcockpit.backend.state.state_checks import check_optimizer_params

    state = load_checkpoint(checkpoint_dir, plan=trainer.plan)  # a planted giant: unread
    checked = check_state(state, checkpoint_dir)
    pos, plan = checked.pos, checked.plan
    model_cls, config_cls = checked.family.model_class, checked.family.config_class
    sharded = bool(state.get("shards"))  # FSDP: weights and optimizer in shards/ (fsdp_checkpoint)
    weights = None if sharded else state["model"]
    model = model_from_saved(model_cls, config_cls, state["config"], weights)
    if sharded:  # every rank reads them whole, whatever world size wrote them
        load_sharded_weights(checkpoint_dir, model, trainer.dist)
    levels = levels_from_saved(
        state.get("levels", []),
        open_levels_at(plan, pos.stage_index, pos.stage_entered),
        model_cls,
        config_cls,
    )
    optimizer_stage = _optimizer_stage(plan, pos)
    if optimizer_stage is not None and state["optimizer"] is not None and not sharded:
        check_optimizer_params(
            state["optimizer"], _param_groups(model, *optimizer_stage), checkpoint_dir / "state.pt"
        )
    trainer.pos, trainer.plan, trainer.levels = pos, plan, levels
    adopt_threads(trainer, pos.cpu_threads)
    trainer.model = model.to(trainer.device)
    trainer.optimizer = None
    if optimizer_stage is not None:
        trainer.configure_training(*optimizer_stage)
        if state["optimizer"] is not None and trainer.optimizer is not None:
            load_optimizer_state(trainer.optimizer, state["optimizer"])  # FSDP: cut to shards
        if sharded and trainer.optimizer is not None:  # FSDP: each rank its own shards
            load_sharded_optimizer(checkpoint_dir, trainer.model, trainer.optimizer, trainer.dist)
    note = rng.restore(state["rng"], trainer.dist, trainer.device)
    if note:
        trainer.report.warn(f"resume: {note}")
    if trainer.steps.scaler is not None and state.get("scaler"):
        trainer.steps.scaler.load_state_dict(state["scaler"])


def adopt_threads(trainer: RestoreHost, threads: int) -> None:
    """Train on with the intra-op thread count the checkpoint was written with (CPU).

    CPU kernels split reductions by thread count, so another count changes
    results at rounding level (bench/determinism.py: 1 vs 2 threads differ by
    ~1e-6 in the loss, the same count is bitwise identical). An explicit
    OMP_NUM_THREADS wins, with a warning that the resume is then not exact; so
    does this machine's core count (a count copied from a bigger machine, or a
    lying checkpoint, never oversubscribes it).
    """
    import torch

    now = torch.get_num_threads()
    if trainer.device.type != "cpu" or threads <= 0 or threads == now:
        return
    if os.environ.get("OMP_NUM_THREADS"):
        trainer.report.warn(
            f"OMP_NUM_THREADS gives {now} threads but this run trained with {threads}: "
            "the resumed losses match at rounding level, not bit for bit"
        )
        return
    cores = os.cpu_count() or 1
    if threads > cores:
        trainer.report.warn(
            f"this run trained with {threads} CPU threads but this machine has {cores} cores: "
            f"keeping {now}; the resumed losses match at rounding level, not bit for bit"
        )
        return
    torch.set_num_threads(threads)
    trainer.report.warn(
        f"using {threads} CPU threads as this run did (found {now}): resume stays bit for bit"
    )


def _optimizer_stage(plan: Plan, pos: TrainerPosition) -> tuple[Stage, list[int]] | None:
    """The stage (and its trainable blocks) whose optimizer the checkpoint holds, if any.

    A checkpoint taken at a stage start (before the operator) holds the
    previous stage's optimizer: it is rebuilt for that stage so that entering
    the stage can carry its state over as the uninterrupted run did.
    """
    index = pos.stage_index
    if pos.stage_entered:
        stage = plan.stages[index]
    elif index > 0 and not plan.optim.optimizer_reset:
        index -= 1
        stage = plan.stages[index]
    else:
        return None
    depth_before = plan.stages[index - 1].layers if index > 0 else 0
    return stage, trainable_layer_ids(stage, depth_before)


def _param_groups(model: nn.Module, stage: Stage, trainable: list[int]) -> list[list[torch.Tensor]]:
    """The parameter groups `configure_training` will give the optimizer over `model`."""
    from growcockpit.backend.loop.optim import trainable_groups
    from growcockpit.grow.freeze import apply_freeze

    apply_freeze(model, trainable, stage.embeddings_trainable(), stage.head_trainable())
    import torch

    groups: list[list[torch.Tensor]] = [list(g) for g in trainable_groups(model) if g]
    return groups or [[torch.zeros(1)]]  # build_optimizer's placeholder when nothing trains


def restored_event(
    pos: TrainerPosition, path: Path, from_step: int | None, set_aside: int = 0
) -> RolledBack:
    """Where a restore put the run, for readers that hold the steps after it (`rolled_back`)."""
    return RolledBack(
        step=pos.step,
        stage=pos.stage_index,
        stage_entered=pos.stage_entered,
        step_in_stage=pos.step_in_stage,
        lr_scale=pos.lr_scale,
        tokens=pos.tokens,
        checkpoint=str(path),
        from_step=from_step,
        set_aside=set_aside,
    )


def rollback_target(root: Path, now: int, step: int | None) -> Path:
    """The checkpoint a live `rollback` returns to; RestoreError when there is none.

    `step` None means the newest readable checkpoint at or before step `now`.
    """
    if step is not None:
        return pick_checkpoint(root, step)[0]
    candidates = [p for p in checkpoint_dirs(root) if step_of(p) <= now]
    usable = [p for p in reversed(candidates) if not unreadable_reason(p)]
    if not usable:
        raise RestoreError(f"{root}: no checkpoint at or before step {now}")
    return usable[0]


def rolled_back_text(path: Path, moved: list[Path], pos: TrainerPosition) -> str:
    """The rollback ack: where the run now stands, and what was set aside."""
    aside = f"; {len(moved)} later checkpoint(s) moved to checkpoints/{SET_ASIDE}/" if moved else ""
    return (
        f"rolled back to {path.name} (stage {pos.stage_index + 1}, "
        f"LR scale ×{pos.lr_scale:g}){aside}"
    )


def rollback_trainer(trainer: RollbackHost, step: int | None, lr_scale: float | None = None) -> str:
    """Restore an earlier checkpoint into a live run; returns the ack text.

    Raises RestoreError (the run is left untouched) when there is none. Later
    checkpoints are set aside, so a later `resume` follows this timeline.
    `lr_scale`: train on at this scale instead of the checkpoint's: after a
    blow-up the checkpoint's own scale is often the one that blew up.
    """
    root = RunPaths(trainer.run_dir).checkpoints
    path = rollback_target(root, trainer.pos.step, step)
    before, from_step = trainer.plan, trainer.pos.step
    try:
        trainer.restore(path)
    except Exception as exc:
        raise RestoreError(f"{path}/state.pt: cannot be loaded ({str(exc)[:200]})") from None
    if lr_scale is not None:
        trainer.pos.lr_scale = lr_scale
    trainer.last_loss = None
    trainer.waiting = trainer.advance_now = False
    trainer.rewound = True
    moved = set_aside_later(root, step_of(path)) if trainer.dist.is_main else []
    if trainer.plan != before:
        trainer.replan(trainer.plan, 0)
    trainer.report.emit(restored_event(trainer.pos, path, from_step, len(moved)))
    return rolled_back_text(path, moved, trainer.pos)
