"""The configurations the step benchmark times: the product's step per stage, and its twin.

Each stage of a plan (and its full-depth baseline) gets a real `Trainer`
(backend/loop/engine.py), walked to that stage by the engine's own
`enter_stage` (operator, freeze, optimizer, compile), whose step is the
engine's `train_step` (backend/loop/step.py: prefetched batch, autocast,
staged forward, guarded update, per-layer metrics and timing at the plan's
cadence, the step event and its host read at `log_every_steps`). The twin is
the reference model loaded with that trainer's weights, trainable flags and
frozen prefix (bench/reference/weights.py), stepped by nanoGPT's loop
(bench/reference/loop.py) on the same batches, already on the device.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.data.blocks import Batch, TokenBlocks
from growcockpit.backend.loop.engine import Trainer
from growcockpit.backend.loop.precision import autocast
from growcockpit.plan import validate_plan
from growcockpit.plan.types import MetricsSpec, Plan
from reference.loop import reference_optimizer, reference_step
from reference.model import ReferenceModel
from reference.weights import from_hf

Kind = Literal[
    "product", "product-nometrics", "product-default-metrics", "product-bare", "reference"
]
Metrics = Literal["plan", "off", "default"]  # the plan's cadence, none, MetricsSpec's defaults
LONG_STAGE = 10**7  # steps per stage in the timed plan: no stage ends (or reports) early


@dataclass
class Timed:
    """One timed configuration: a step function and what was measured of it."""

    label: str  # "full-12", "2 grow-6"
    kind: Kind
    compiled: bool
    step: Callable[[], None]
    tokens: int  # per step
    chunk_ms: list[float] = field(default_factory=list)  # mean ms per step of each timed chunk
    ops: float | None = None  # dispatched operators per step (eager) / profiler count (compiled)
    warm_s: float = 0.0  # the first steps (a compile, if any)
    launches: float | None = None  # CUDA kernel launches per step (profiler; CUDA only)


def timed_plan(
    plan: Plan, compile_: bool, metrics: Metrics = "plan", backend: str = "inductor"
) -> Plan:
    """`plan` with stages that never end within the timing, no eval, no step checkpoints;
    `compile_` as `[optim] compile`; `metrics`: the per-layer metrics at the plan's cadence,
    off, or at the cadence a plan gets when it sets none (`MetricsSpec`'s defaults)."""
    p = copy.deepcopy(plan)
    for s in p.stages:
        s.steps = LONG_STAGE
        s.warmup_steps = None
    p.metrics.eval_every_steps = 0
    p.metrics.system_every_s = 0.0
    if metrics == "off":
        p.metrics.every_steps = p.metrics.timing_every_steps = 0
    elif metrics == "default":
        p.metrics.every_steps = MetricsSpec.every_steps
        p.metrics.timing_every_steps = MetricsSpec.timing_every_steps
    p.checkpoint.every_steps = 0
    p.checkpoint.every_minutes = 0.0
    p.optim.compile = compile_
    if compile_:
        p.optim.compile_backend = backend  # type: ignore[assignment]
    validate_plan(p, source=p.name)
    return p


def trainer_at(
    plan: Plan, stage: int, data: TokenBlocks, device: torch.device, root: Path
) -> Trainer:
    """A Trainer entered into stage `stage` by the engine, every earlier stage's operator applied
    in turn (the stage-start checkpoint is skipped: it is no part of a step)."""
    torch.manual_seed(plan.seed)
    t = Trainer(plan, root, data, RunReporter(), device)
    for index in range(stage + 1):
        t.pos.stage_index = index
        t.pos.step_in_stage = 0
        t.pos.stage_entered = False
        t.cadence.written(t.pos.step)
        t.enter_stage()
    return t


def twin_batches(t: Trainer, batches: int) -> list[Batch]:
    """The first `batches` training batches of `t`'s data, already on its device (a twin
    cycles through them: no data loading in its step)."""
    size = t.plan.optim.batch_size
    return [t.data.train_batch(i, size).to(t.device) for i in range(batches)]


def reference_twin(
    t: Trainer, batches: int, compile_: bool
) -> tuple[ReferenceModel, Callable[[], None]]:
    """The reference model with `t`'s weights and frozen set, and its loop's step."""
    ref = from_hf(t.model, t.forward.frozen_prefix, t.forward.embeddings_trainable)
    plan = t.plan
    device = t.device
    blocks = twin_batches(t, batches)
    assert t.optimizer is not None
    fused = t.optimizer.defaults.get("fused")  # the product's implementation, not a better one
    optimizer = reference_optimizer(ref, t.current_lr(), plan.optim.weight_decay, fused)
    if compile_:
        ref.loss = torch.compile(ref.loss, backend=plan.optim.compile_backend or "inductor")  # type: ignore[method-assign]
    precision = t.steps.precision

    def amp() -> object:
        return autocast(precision, device)

    return ref, reference_step(ref.loss, optimizer, blocks, amp, plan.optim.grad_clip)  # type: ignore[arg-type]


def bare_step(t: Trainer, batches: int) -> Callable[[], None]:
    """The product's model math alone, in the reference loop's shape: `t`'s own loss module
    (staged forward, fast blocks, frozen bottom), backward, clip and optimizer, on the twin's
    batches, with none of the engine's step around it (no data loading, finiteness and spike
    flags, timers, metrics or step event). Set beside the product and the reference, it
    splits their gap into the model's math (bare vs reference) and the step's own work
    (product vs bare)."""
    assert t.optimizer is not None
    blocks = twin_batches(t, batches)
    return reference_step(
        t.train_module, t.optimizer, blocks, t.steps.autocast, t.plan.optim.grad_clip
    )


def tokens_per_step(plan: Plan) -> int:
    return plan.optim.batch_size * plan.data.seq_len * plan.optim.grad_accum_steps
