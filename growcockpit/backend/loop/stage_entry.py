"""Entering a stage: the operator that turns the previous stage's model into this one's,
then the freeze policy, the (DDP or FSDP) wrapper and a fresh optimizer.

Kept apart from the step loop (loop/engine.py) so that the loop reads top to bottom; the
functions take the live `Trainer` whose model, optimizer and position they replace.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Protocol

from torch import nn

from growcockpit.backend.device import release_cached_memory
from growcockpit.backend.dist.fsdp import (
    DeviceMesh,
    Sharding,
    is_sharded,
    mesh_for,
    sharded_root,
    unsharded,
)
from growcockpit.backend.dist.fsdp_grow import (
    ShardedChange,
    carry_sharded_optimizer_state,
    grow_locally,
    materialise,
    takes_local_path,
)
from growcockpit.backend.loop.forward import LossModule, StagedForward
from growcockpit.backend.loop.operators import GrowInput, apply_operator
from growcockpit.backend.loop.optim import FUSED_ADAMW_DEVICES, build_optimizer
from growcockpit.backend.loop.plateau import PlateauTrigger, trigger_for
from growcockpit.backend.loop.probe import Trainer as ProbeHost
from growcockpit.backend.loop.probe import resolve_probe
from growcockpit.backend.loop.recipes import fresh_state_layers, gated_layer_ids
from growcockpit.backend.loop.stage_events import StageEntry, grown, stage_started
from growcockpit.grow import GrowResult, apply_freeze, carry_optimizer_state, get_layers
from growcockpit.grow.model_parts import part
from growcockpit.metrics import LayerStatsSampler
from growcockpit.plan import resolve_shapes
from growcockpit.plan.operators import changes_model
from growcockpit.plan.types import Stage, trainable_layer_ids


class StageHost(ProbeHost, Protocol):
    """What entering a stage needs of the live trainer (backend/loop/engine.py's `Trainer`);
    a protocol, so that this module and the engine do not import each other."""

    plateau: PlateauTrigger | None
    waiting: bool
    fsdp: bool
    mesh: DeviceMesh | None
    sharded_change: ShardedChange | None  # FSDP: set by the operator, used by configure_training

    def probe_loss(self) -> float | None: ...

    def checkpoint(self, reason: str) -> Path | None: ...

    def configure_training(
        self, stage: Stage, trainable: list[int], grow: GrowResult | None = None
    ) -> None: ...

    def set_train_modes(self) -> None: ...


def enter_stage(t: StageHost) -> None:
    """Apply the stage's operator, freeze policy and a fresh optimizer."""
    if t.stage.enter == "probe":  # the best candidate takes its place (loop/probe.py)
        resolve_probe(t)
    index = t.pos.stage_index
    stage = t.stage
    if t.cadence.stage_start_due(t.pos.step):
        with t.report.startup.phase("checkpoint"):
            t.checkpoint("stage")
    depth_before = len(get_layers(t.model)) if index > 0 else 0
    t.recipes.clear()  # a stage advanced mid-ramp leaves its gates behind
    t.plateau = trigger_for(stage)
    started = time.perf_counter()
    loss_before = t.probe_loss() if changes_model(stage.enter) else None
    grow = apply_stage_operator(t, stage, depth_before)
    op_seconds = time.perf_counter() - started
    trainable = trainable_layer_ids(stage, depth_before)
    t.pos.gated_layers = gated_layer_ids(stage, grow)
    t.configure_training(stage, trainable, grow)
    freed = release_cached_memory(t.device)  # the replaced model and optimizer
    t.pos.stage_entered = True
    t.waiting = False
    entry = StageEntry(
        index=index,
        step=t.pos.step,
        width=int(part(t.model, "config.hidden_size")),
        trainable=trainable,
        op_seconds=op_seconds,
        reason="init" if index == 0 else t.pos.enter_reason,
        compile_s=t.steps.compile_s,
        freed_bytes=freed if t.device.type == "cuda" else None,
    )
    t.report.emit(stage_started(stage, entry))
    if grow is not None:
        t.report.emit(grown(grow, entry, loss_before, t.probe_loss()))


def apply_stage_operator(t: StageHost, stage: Stage, depth_before: int) -> GrowResult | None:
    """Turn the previous stage's model into this stage's: the operator table's grow
    function (backend/loop/operators.py), with the level snapshots the plan walk names."""
    shape = resolve_shapes(t.plan)[t.pos.stage_index]
    family = t.plan.model.family
    if t.fsdp and is_sharded(t.model):  # which path: backend/dist/fsdp_grow.py
        old = t.model
        if takes_local_path(stage):  # local shards, never the whole model
            growth, result = grow_locally(old, stage)
            t.sharded_change = ShardedChange(old, growth)
            t.model = growth.skeleton
            return result
        t.sharded_change = ShardedChange(old, None)
    plain = unsharded(t.model, t.device)  # FSDP: whole weights, via state
    model, result = apply_operator(GrowInput(plain, stage, shape, family, t.levels))
    t.model = model.to(t.device)
    return result


def configure_training(
    t: StageHost, stage: Stage, trainable: list[int], grow: GrowResult | None = None
) -> None:
    """requires_grad first, then the optimizer over exactly that set (each DDP rank
    builds the same one, so their parameter groups agree)."""
    result = apply_freeze(t.model, trainable, stage.embeddings_trainable(), stage.head_trainable())
    depth = len(get_layers(t.model))
    t.forward = StagedForward.for_stage(result.trainable_layers, depth, result.embeddings_trainable)
    t.set_train_modes()
    change, t.sharded_change = t.sharded_change, None
    if t.fsdp:
        t.train_module = sharded_loss_module(t, change)
    else:
        t.train_module = t.dist.wrap(LossModule(t.model, t.forward), t.device)
    lr = t.current_lr()
    previous = t.optimizer
    with t.report.startup.phase("optimizer"):
        fused = t.device.type in FUSED_ADAMW_DEVICES
        t.optimizer = build_optimizer(t.model, t.plan.optim, lr, fused=fused)
    if previous is not None and not t.plan.optim.optimizer_reset:
        fresh = fresh_state_layers(stage, grow)
        if change is not None:  # FSDP: by name, cut to the new shards
            carry_sharded_optimizer_state(previous, change.old, t.optimizer, t.model, grow, fresh)
        else:
            carry_optimizer_state(previous, t.optimizer, t.model, grow, fresh)
    t.stats = LayerStatsSampler(t.model)
    t.health.configure(t.model, t.optimizer, trainable, t.pos.stage_index, stage)
    t.recipes.install(
        t.model,
        stage,
        t.pos.gated_layers,
        t.forward,
        seed=t.plan.seed,
        step_in_stage=t.pos.step_in_stage,
        step=t.pos.step,
    )
    t.steps.enter(t)  # spike windows start afresh, the step module is compiled


def sharded_loss_module(t: StageHost, change: ShardedChange | None) -> nn.Module:
    """FSDP: the model sharded with its stage's forward as the root (backend/dist/fsdp.py),
    or the local path's grown model materialised from the old shards
    (backend/dist/fsdp_grow.py); the optimizer built next sees only this rank's shards."""
    if t.mesh is None:
        t.mesh = mesh_for(t.device, t.dist.world_size)
    how = Sharding(t.mesh, t.steps.precision, t.plan.distributed.cpu_offload)
    root_of = lambda model: LossModule(model, t.forward)  # noqa: E731
    if change is not None and change.local is not None:
        t.model, root = materialise(change.local, root_of, how, t.device)
    else:
        t.model, root = sharded_root(unsharded(t.model, t.device), root_of, how)
    return root
