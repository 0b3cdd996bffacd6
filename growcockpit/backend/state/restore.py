"""Going back to a checkpoint: `resume` of a dead run and `rollback` of a live one.

Both restore the same thing (weights, optimizer, plan and position, RNG,
V-cycle level snapshots), so a rolled-back run continues exactly as a run
resumed from that checkpoint would. Choosing the checkpoint is careful: a
truncated latest checkpoint is skipped for the previous good one (and the
user is told), and checkpoints after the one restored are moved to
`checkpoints/rolled-back/`, so a later `resume` follows the new timeline
instead of jumping back onto the abandoned one. Choosing a checkpoint needs no
torch, so `resume` can do it before the heavy imports.

Nothing here writes the trainer: `read_restore` reads and checks a checkpoint and returns
it (`Restored`), `load_rest` puts the optimizer state, RNG and scaler into the objects it
is handed, and the engine (backend/loop/engine.py `restore`, `rollback`) adopts the rest.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from growcockpit.backend.state.checkpoint_dirs import SHARDS_DIR, checkpoint_dirs, step_of
from growcockpit.plan.types import Plan, Stage, trainable_layer_ids
from growcockpit.protocol import safe_fs
from growcockpit.protocol.events import RolledBack

if TYPE_CHECKING:  # torch-heavy: choosing a checkpoint must not import them
    import torch
    from torch import nn

    from growcockpit.backend.control.reporter import RunReporter
    from growcockpit.backend.parallel.distributed import DistContext
    from growcockpit.backend.state.checkpoint import TrainerPosition
    from growcockpit.backend.state.levels import LevelSnapshot

SET_ASIDE = "rolled-back"

# the optimizer's parameter groups over a model (backend/loop/optim.py `trainable_groups`),
# handed in: the state layer builds no optimizer
GroupsOf = Callable[["nn.Module"], Iterable[Iterable["torch.Tensor"]]]


class RestoreReads(Protocol):
    """What reading a checkpoint needs of the live trainer: the plan that caps its size, and
    where the weights go (every rank reads sharded weights whole)."""

    @property
    def plan(self) -> Plan: ...

    @property
    def dist(self) -> DistContext: ...


class ThreadReads(Protocol):
    @property
    def device(self) -> torch.device: ...

    @property
    def report(self) -> RunReporter: ...


@dataclass(frozen=True)
class Restored:
    """A checkpoint read and checked, nothing applied yet: the position, plan and open
    levels, the model (on the CPU, whole), the stage whose optimizer it holds, and the
    raw state the optimizer, RNG and scaler come back from (`load_rest`)."""

    checkpoint_dir: Path
    pos: TrainerPosition
    plan: Plan
    levels: dict[int, LevelSnapshot]
    model: nn.Module
    optimizer_stage: tuple[Stage, list[int]] | None
    state: dict[str, Any]
    sharded: bool  # FSDP: weights and optimizer in shards/ (fsdp_checkpoint)


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


def read_restore(trainer: RestoreReads, checkpoint_dir: Path, groups_of: GroupsOf) -> Restored:
    """The checkpoint to continue from: same weights, optimizer, plan position and RNG.

    Every part is checked (backend/state/checkpoint_checks.py) and the new model and
    optimizer state are matched (over the groups `groups_of` gives) before anything is
    returned, so a refused checkpoint (CheckpointError) leaves a live run exactly as it was.
    """
    from growcockpit.backend.model import model_from_saved
    from growcockpit.backend.state.checkpoint import load_checkpoint
    from growcockpit.backend.state.checkpoint_checks import check_state
    from growcockpit.backend.state.fsdp_checkpoint import load_sharded_weights
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
        groups = _param_groups(model, groups_of, *optimizer_stage)
        check_optimizer_params(state["optimizer"], groups, checkpoint_dir / "state.pt")
    return Restored(checkpoint_dir, pos, plan, levels, model, optimizer_stage, state, sharded)


def load_rest(
    restored: Restored,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None,
    dist: DistContext,
    device: torch.device,
    scaler: torch.amp.GradScaler | None,
    warn: Callable[[str], None],
) -> None:
    """What a checkpoint restores besides the trainer's own fields, into the objects handed
    in: the optimizer's state (built for `restored.optimizer_stage` over `model`), the RNG
    and the fp16 scaler."""
    from growcockpit.backend.parallel.fsdp import load_optimizer_state
    from growcockpit.backend.state import rng
    from growcockpit.backend.state.fsdp_checkpoint import load_sharded_optimizer

    state = restored.state
    if restored.optimizer_stage is not None and optimizer is not None:
        if state["optimizer"] is not None:
            load_optimizer_state(optimizer, state["optimizer"])  # FSDP: cut to shards
        if restored.sharded:  # FSDP: each rank its own shards
            load_sharded_optimizer(restored.checkpoint_dir, model, optimizer, dist)
    note = rng.restore(state["rng"], dist, device)
    if note:
        warn(f"resume: {note}")
    if scaler is not None and state.get("scaler"):
        scaler.load_state_dict(state["scaler"])


def adopt_threads(trainer: ThreadReads, threads: int) -> None:
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


def _param_groups(
    model: nn.Module, groups_of: GroupsOf, stage: Stage, trainable: list[int]
) -> list[list[torch.Tensor]]:
    """The parameter groups `configure_training` will give the optimizer over `model`."""
    from growcockpit.grow.freeze import apply_freeze

    apply_freeze(model, trainable, stage.embeddings_trainable(), stage.head_trainable())
    import torch

    groups: list[list[torch.Tensor]] = [list(g) for g in groups_of(model) if g]
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


def rollback_target(root: Path, now: int, step: int | None, raised: int | None = None) -> Path:
    """The checkpoint a live `rollback` returns to; RestoreError when there is none.

    `step` None means the newest readable checkpoint at or before step `now`; or, when
    the LR was `raised` at a step (a run paused after an LR raise), the one from before
    the raise that a blow-up's advice names (`advised_rollback_step`).
    """
    if step is None and raised is not None:
        step = advised_rollback_step(root, now, raised)
    if step is not None:
        return pick_checkpoint(root, step)[0]
    candidates = [p for p in checkpoint_dirs(root) if step_of(p) <= now]
    usable = [p for p in reversed(candidates) if not unreadable_reason(p)]
    if not usable:
        raise RestoreError(f"{root}: no checkpoint at or before step {now}")
    return usable[0]


def load_or_refuse(restore: Callable[[Path], None], path: Path) -> None:
    """A live rollback's restore: any failure is the one-line RestoreError the ack shows,
    and the run is left untouched (`read_restore` checks everything before it changes)."""
    try:
        restore(path)
    except Exception as exc:
        raise RestoreError(f"{path}/state.pt: cannot be loaded ({str(exc)[:200]})") from None


def rolled_back_text(path: Path, moved: list[Path], pos: TrainerPosition) -> str:
    """The rollback ack: where the run now stands, and what was set aside."""
    aside = f"; {len(moved)} later checkpoint(s) moved to checkpoints/{SET_ASIDE}/" if moved else ""
    return (
        f"rolled back to {path.name} (stage {pos.stage_index + 1}, "
        f"LR scale ×{pos.lr_scale:g}){aside}"
    )
