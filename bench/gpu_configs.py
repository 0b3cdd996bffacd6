"""The stage configurations the GPU check times, and the step it times: the engine's.

Each configuration is built the way `Trainer.enter_stage` builds a stage
(build_model → stack_layers → apply_freeze → StagedForward.for_stage →
build_optimizer, frozen layers in eval mode), and each timed step is the
engine's step (backend/loop/step.py) minus data loading and events: the batch's
`picked` positions go to the forward (without them BERT's head finds the
masked rows with a nonzero, a host sync every step), the optimizer is fused
AdamW on CUDA as the engine builds it, and the update is the engine's
clip + guarded step (a non-finite step skipped on the device, no host read).
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from growcockpit.backend.calibrate import Clock
from growcockpit.backend.data.blocks import Batch, TokenBlocks
from growcockpit.backend.loop.forward import StagedForward
from growcockpit.backend.loop.optim import build_optimizer, guarded_step
from growcockpit.backend.model import build_model
from growcockpit.grow import apply_freeze, get_layers, set_train_modes, stack_layers
from growcockpit.plan import validate_plan
from growcockpit.plan.shapes import resolve_shapes
from growcockpit.plan.types import Plan


def tiny_plan(plan: Plan) -> Plan:
    """The same schedule at hidden 64 / 4 heads / FFN 256, depths divided by 3 (12 → 4)."""
    p = copy.deepcopy(plan)
    p.name = plan.name + "-tiny"
    p.model.hidden_size, p.model.num_heads, p.model.intermediate_size = 64, 4, 256
    p.model.max_seq_len = 128
    p.model.final_layers = max(1, plan.model.final_layers // 3)
    p.data.tokenizer = "train:2000"
    p.data.seq_len = 64
    p.optim.batch_size = 8
    for s in p.stages:
        s.layers = max(1, s.layers // 3)
    validate_plan(p, source=p.name)
    return p


def override(plan: Plan, batch_size: int | None, seq_len: int | None) -> Plan:
    p = copy.deepcopy(plan)
    if batch_size:
        p.optim.batch_size = batch_size
    if seq_len:
        p.data.seq_len = seq_len
        p.model.max_seq_len = max(p.model.max_seq_len, seq_len)
    return p


@dataclass
class Config:
    """One stage's training setup, built like `Trainer.enter_stage` builds it."""

    label: str  # "mslt/2 grow-6"
    plan: str  # "mslt" | "baseline"
    stage_index: int
    name: str
    steps_in_plan: int
    depth: int
    trainable: list[int]
    embeddings_trainable: bool
    model: nn.Module
    forward: StagedForward
    optimizer: torch.optim.Optimizer
    params: list[nn.Parameter]
    times_ms: list[float] = field(default_factory=list)
    extra_mem: int = 0  # bytes above the resident set while this config steps
    util: list[float] = field(default_factory=list)
    power: list[float] = field(default_factory=list)
    parts: dict[str, float] = field(default_factory=dict)
    busy: float | None = None  # share of a step's wall time the GPU runs kernels (profiler)
    util_window_s: float = 0.0  # length of the one contiguous window util was sampled over


def build_configs(tag: str, plan: Plan, data: TokenBlocks, device: torch.device) -> list[Config]:
    """Walk the plan's operators on one model; snapshot a configured copy per stage."""
    shapes = resolve_shapes(plan)
    torch.manual_seed(plan.seed)
    model = build_model(plan.model, plan.stages[0].layers, data.tokenizer)
    configs: list[Config] = []
    for index, (stage, shape) in enumerate(zip(plan.stages, shapes, strict=True)):
        depth_before = len(get_layers(model)) if index > 0 else 0
        if stage.enter == "stack":
            stack_layers(model, stage.layers - depth_before, stage.source)
        elif stage.enter not in ("init", "continue"):
            raise SystemExit(
                f"gpu_check: stage {stage.name}: enter = {stage.enter!r} is not supported here"
            )
        m = copy.deepcopy(model).to(device)
        result = apply_freeze(
            m, shape.trainable_layers, stage.embeddings_trainable(), stage.head_trainable()
        )
        depth = len(get_layers(m))
        fwd = StagedForward.for_stage(result.trainable_layers, depth, result.embeddings_trainable)
        set_train_modes(m)
        lr = stage.lr if stage.lr is not None else plan.optim.lr
        # the engine's construction (backend/loop/engine.py configure_training): fused on CUDA
        opt = build_optimizer(m, plan.optim, lr, fused=device.type == "cuda")
        params = [p for g in opt.param_groups for p in g["params"]]
        configs.append(
            Config(
                label=f"{tag}/{index + 1} {stage.name}",
                plan=tag,
                stage_index=index,
                name=stage.name,
                steps_in_plan=stage.steps,
                depth=depth,
                trainable=list(result.trainable_layers),
                embeddings_trainable=result.embeddings_trainable,
                model=m,
                forward=fwd,
                optimizer=opt,
                params=params,
            )
        )
    return configs


def device_batches(
    blocks: TokenBlocks, n: int, batch_size: int, device: torch.device
) -> list[Batch]:
    """`n` real training batches on `device`, `picked` included (the engine's `Batch.to`)."""
    return [blocks.train_batch(i, batch_size).to(device) for i in range(n)]


def update(cfg: Config, loss: torch.Tensor, grad_clip: float) -> None:
    """The engine's update (backend/loop/step.py `StepRunner.update`, no scaler): clip, then a
    step the optimizer skips on the device if the loss or gradient is non-finite."""
    params = [p for p in cfg.params if p.grad is not None]
    if not params:
        return
    if grad_clip > 0:
        norm = torch.nn.utils.clip_grad_norm_(params, grad_clip)
    else:
        norm = torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None])
    ok = torch.isfinite(norm.to(loss.device)) & torch.isfinite(loss.detach().float())
    guarded_step(cfg.optimizer, ok)
    cfg.optimizer.zero_grad(set_to_none=True)


def make_step(cfg: Config, batches: list[Batch], amp: Any, grad_clip: float) -> Callable[[], None]:
    """One training step as `StepRunner.run` does it (minus data loading and events)."""
    state = {"i": 0}

    def step() -> None:
        batch = batches[state["i"] % len(batches)]
        state["i"] += 1
        with amp():
            loss = cfg.forward.loss(cfg.model, batch)
        if loss.requires_grad:
            loss.backward()
            update(cfg, loss, grad_clip)

    return step


def breakdown(
    cfg: Config, batches: list[Batch], amp: Any, grad_clip: float, clock: Clock, n: int
) -> dict[str, float]:
    """Median forward / backward / optimizer (clip + step + zero_grad) ms, synchronized between phases."""
    parts: dict[str, list[float]] = {"fwd_ms": [], "bwd_ms": [], "opt_ms": []}
    for i in range(n):
        batch = batches[i % len(batches)]
        clock.sync()
        t0 = time.perf_counter()
        with amp():
            loss = cfg.forward.loss(cfg.model, batch)
        clock.sync()
        t1 = time.perf_counter()
        if loss.requires_grad:
            loss.backward()
        clock.sync()
        t2 = time.perf_counter()
        if loss.requires_grad:
            update(cfg, loss, grad_clip)
        clock.sync()
        t3 = time.perf_counter()
        parts["fwd_ms"].append((t1 - t0) * 1e3)
        parts["bwd_ms"].append((t2 - t1) * 1e3)
        parts["opt_ms"].append((t3 - t2) * 1e3)
    return {k: statistics.median(v) for k, v in parts.items()}
