"""Entering a stage, evaluated: the operator that turns the previous stage's model into
this one's, then the freeze policy, the (DDP or FSDP) wrapper and a fresh optimizer.

Kept apart from the step loop (loop/engine.py) so that the loop reads top to bottom. The
functions read the live trainer (`StageReads`) and return what changes (`Operated`,
`Configured`); the engine applies those values, so it stays the one writer of its state.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.data.blocks import TokenBlocks
from growcockpit.backend.loop.evaluation import loaded_event
from growcockpit.backend.loop.forward import LossModule, StagedForward
from growcockpit.backend.loop.layer_checks import LayerHealth
from growcockpit.backend.loop.operators import GrowInput, apply_operator
from growcockpit.backend.loop.optim import FUSED_ADAMW_DEVICES, build_optimizer
from growcockpit.backend.loop.recipes import StageRecipes, fresh_state_layers
from growcockpit.backend.loop.stage_events import StageEntry, grown, stage_started
from growcockpit.backend.loop.step import StepRunner
from growcockpit.backend.loop.trainer_reads import TrainerReads
from growcockpit.backend.parallel.fsdp import (
    DeviceMesh,
    Sharding,
    is_sharded,
    mesh_for,
    sharded_root,
    unsharded,
)
from growcockpit.backend.parallel.fsdp_grow import (
    ShardedChange,
    carry_sharded_optimizer_state,
    grow_locally,
    materialise,
    takes_local_path,
)
from growcockpit.backend.state.init_from import initial_model
from growcockpit.backend.state.levels import LevelSnapshot
from growcockpit.grow import (
    GrowResult,
    apply_freeze,
    carry_optimizer_state,
    get_layers,
    set_train_modes,
)
from growcockpit.grow.model_parts import part
from growcockpit.metrics import LayerStatsSampler
from growcockpit.plan import resolve_shapes
from growcockpit.plan.operators import changes_model
from growcockpit.plan.types import Plan, Stage


class StageReads(TrainerReads, Protocol):
    """What entering a stage reads of the live trainer (backend/loop/engine.py's `Trainer`);
    a protocol, so that this module and the engine do not import each other."""

    @property
    def levels(self) -> dict[int, LevelSnapshot]: ...

    @property
    def fsdp(self) -> bool: ...

    @property
    def mesh(self) -> DeviceMesh | None: ...

    @property
    def steps(self) -> StepRunner: ...

    @property
    def health(self) -> LayerHealth: ...

    @property
    def recipes(self) -> StageRecipes: ...

    @property
    def forward(self) -> StagedForward: ...

    def current_lr(self) -> float: ...

    def probe_loss(self) -> float | None: ...


@dataclass(frozen=True)
class Operated:
    """A stage's operator applied: the model it made and what `configure_training` needs."""

    model: nn.Module
    grow: GrowResult | None
    change: ShardedChange | None  # FSDP: the old shards (and the local growth, if any)
    levels: dict[int, LevelSnapshot]  # the open levels after this stage (plan walk)
    depth_before: int
    op_seconds: float
    loss_before: float | None  # the first validation batch's loss before the operator


@dataclass(frozen=True)
class Configured:
    """A trainable set made ready: the (sharded or wrapped) model, its forward and optimizer."""

    model: nn.Module
    forward: StagedForward
    train_module: nn.Module
    optimizer: torch.optim.Optimizer
    stats: LayerStatsSampler
    mesh: DeviceMesh | None


def first_model(
    plan: Plan, data: TokenBlocks, report: RunReporter, device: torch.device, reads: bool
) -> nn.Module:
    """Stage 1's model on the device, built or read from `model.init_from` (and its loss
    before any step reported); `reads` False: allocated only, rank 0's weights come at
    the first shard (FSDP)."""
    with report.startup.phase("init_from" if plan.model.init_from else "model"):
        model, notes = initial_model(plan, data.tokenizer, read_weights=reads)
        model = model.to(device)
    for note in notes:
        report.warn(note)
    if plan.model.init_from is not None and reads:
        report.emit(loaded_event(plan, model, data, device))
    return model


def operate(t: StageReads, stage: Stage) -> Operated:
    """The stage's operator on the trainer's model, timed, with the loss before it."""
    depth_before = len(get_layers(t.model)) if t.pos.stage_index > 0 else 0
    started = time.perf_counter()
    loss_before = t.probe_loss() if changes_model(stage.enter) else None
    model, result, change, levels = apply_stage_operator(t, stage)
    seconds = time.perf_counter() - started
    return Operated(model, result, change, levels, depth_before, seconds, loss_before)


def apply_stage_operator(
    t: StageReads, stage: Stage
) -> tuple[nn.Module, GrowResult | None, ShardedChange | None, dict[int, LevelSnapshot]]:
    """Turn the previous stage's model into this stage's: the operator table's grow
    function (backend/loop/operators.py), with the level snapshots the plan walk names."""
    shape = resolve_shapes(t.plan)[t.pos.stage_index]
    family = t.plan.model.family
    change = None
    if t.fsdp and is_sharded(t.model):  # which path: backend/parallel/fsdp_grow.py
        old = t.model
        if takes_local_path(stage):  # local shards, never the whole model
            growth, result = grow_locally(old, stage)
            return growth.skeleton, result, ShardedChange(old, growth), t.levels
        change = ShardedChange(old, None)
    plain = unsharded(t.model, t.device)  # FSDP: whole weights, via state
    done = apply_operator(GrowInput(plain, stage, shape, family, t.levels))
    return done.model.to(t.device), done.result, change, done.levels


def announce_stage(
    t: StageReads, stage: Stage, op: Operated, trainable: list[int], freed: int
) -> None:
    """stage_started, and `grown` with the loss after the operator when it changed the model."""
    index = t.pos.stage_index
    entry = StageEntry(
        index=index,
        step=t.pos.step,
        width=int(part(t.model, "config.hidden_size")),
        trainable=trainable,
        op_seconds=op.op_seconds,
        reason="init" if index == 0 else t.pos.enter_reason,
        compile_s=t.steps.compile_s,
        freed_bytes=freed if t.device.type == "cuda" else None,
    )
    t.report.emit(stage_started(stage, entry))
    if op.grow is not None:
        t.report.emit(grown(op.grow, entry, op.loss_before, t.probe_loss()))


def configure_training(
    t: StageReads,
    model: nn.Module,
    stage: Stage,
    trainable: list[int],
    grow: GrowResult | None = None,
    change: ShardedChange | None = None,
) -> Configured:
    """requires_grad first, then the optimizer over exactly that set (each DDP rank
    builds the same one, so their parameter groups agree); `t.optimizer` is the previous
    stage's, whose state carries over."""
    result = apply_freeze(model, trainable, stage.embeddings_trainable(), stage.head_trainable())
    depth = len(get_layers(model))
    forward = StagedForward.for_stage(result.trainable_layers, depth, result.embeddings_trainable)
    set_train_modes(model)
    mesh = t.mesh
    if t.fsdp:
        mesh = mesh or mesh_for(t.device, t.dist.world_size)
        model, train_module = sharded_loss_module(t, mesh, model, forward, change)
    else:
        train_module = t.dist.wrap(LossModule(model, forward), t.device)
    lr = t.current_lr()
    previous = t.optimizer
    with t.report.startup.phase("optimizer"):
        fused = t.device.type in FUSED_ADAMW_DEVICES
        optimizer = build_optimizer(model, t.plan.optim, lr, fused=fused)
    if previous is not None and not t.plan.optim.optimizer_reset:
        fresh = fresh_state_layers(stage, grow)
        if change is not None:  # FSDP: by name, cut to the new shards
            carry_sharded_optimizer_state(previous, change.old, optimizer, model, grow, fresh)
        else:
            carry_optimizer_state(previous, optimizer, model, grow, fresh)
    return Configured(model, forward, train_module, optimizer, LayerStatsSampler(model), mesh)


def install_checks_and_recipes(
    t: StageReads, stage: Stage, trainable: list[int], optimizer: torch.optim.Optimizer
) -> None:
    """The configured set's layer checks (backend/loop/layer_checks.py) and the stage's
    recipes (ramp gates, layer drop: backend/loop/recipes.py), each its own state."""
    t.health.configure(t.model, optimizer, trainable, t.pos.stage_index, stage)
    pos = t.pos
    t.recipes.install(
        t.model,
        stage,
        pos.gated_layers,
        t.forward,
        seed=t.plan.seed,
        step_in_stage=pos.step_in_stage,
        step=pos.step,
    )


def sharded_loss_module(
    t: StageReads,
    mesh: DeviceMesh,
    model: nn.Module,
    forward: StagedForward,
    change: ShardedChange | None,
) -> tuple[nn.Module, nn.Module]:
    """FSDP: the model sharded with its stage's forward as the root (backend/parallel/fsdp.py),
    or the local path's grown model materialised from the old shards
    (backend/parallel/fsdp_grow.py); the optimizer built next sees only this rank's shards."""
    how = Sharding(mesh, t.steps.precision, t.plan.distributed.cpu_offload)
    root_of: Callable[[nn.Module], nn.Module] = lambda m: LossModule(m, forward)  # noqa: E731
    if change is not None and change.local is not None:
        return materialise(change.local, root_of, how, t.device)
    return sharded_root(unsharded(model, t.device), root_of, how)
