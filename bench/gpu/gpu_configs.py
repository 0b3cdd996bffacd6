"""The stage configurations the GPU check times, and the step it times: the engine's.

Each configuration is built the way `Trainer.enter_stage` builds a stage
(build_model → the operator table's grow function, `apply_operator`, so a
stack's `source` and `init` act as in the engine → apply_freeze over
`trainable_layer_ids` → StagedForward.for_stage → build_optimizer, frozen
layers in eval mode), and each timed step is the
engine's step (backend/loop/step.py) minus data loading and events: the batch's
`picked` positions go to the forward (without them BERT's head finds the
masked rows with a nonzero, a host sync every step), the optimizer is fused
AdamW on CUDA as the engine builds it, and the update is the engine's
clip + guarded step (a non-finite step skipped on the device, no host read).
`fit_steps` and `timed_rounds` run those steps: warm-up, the budget, the
interleaved rounds. `plan_pairs` says which plans each family times.
"""

from __future__ import annotations

import copy
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from growcockpit.backend.calibrate import Clock
from growcockpit.backend.data.blocks import Batch, TokenBlocks
from growcockpit.backend.loop.forward import StagedForward
from growcockpit.backend.loop.operators import GrowInput, apply_operator
from growcockpit.backend.loop.optim import FUSED_ADAMW_DEVICES, build_optimizer, guarded_step
from growcockpit.backend.model import build_model
from growcockpit.backend.state.levels import LevelSnapshot
from growcockpit.grow import apply_freeze, get_layers, set_train_modes
from growcockpit.plan import load_plan, validate_plan
from growcockpit.plan.shapes import resolve_shapes
from growcockpit.plan.types import Plan, Stage, trainable_layer_ids

TINY_HIDDEN, TINY_HEADS, TINY_KV_HEADS = 64, 4, 2
RESERVE_S = 30.0  # what a budget keeps back from the timed rounds: the extras, the report


def tiny_plan(plan: Plan) -> Plan:
    """The same schedule at hidden 64 / 4 heads, depths divided by 3 (BERT 12 → 4, Llama 30 → 10).

    The FFN keeps the plan's width ratio (BERT 4× → 256, SmolLM's 2.67× → 176), and a
    grouped-query plan keeps grouped queries (2 kv heads, which divide 4), so the tiny
    step exercises the same code paths and the same FLOP terms as the full-size one.
    """
    return shrunk_plan(plan, "tiny", TINY_HIDDEN, seq_len=64, batch_size=8, vocab=2000)


def shrunk_plan(
    plan: Plan, tag: str, hidden: int, seq_len: int, batch_size: int, vocab: int
) -> Plan:
    """`plan` at `hidden` wide (4 heads, 2 kv heads if it groups queries, the FFN's width
    ratio kept), depths divided by 3, its own trained tokenizer of `vocab` tokens."""
    p = copy.deepcopy(plan)
    m = p.model
    p.name = f"{plan.name}-{tag}"
    ratio = plan.model.intermediate_size / max(1, plan.model.hidden_size)
    m.hidden_size, m.num_heads = hidden, TINY_HEADS
    m.intermediate_size = max(16, round(ratio * hidden / 16) * 16)
    if m.num_kv_heads is not None and m.num_kv_heads < plan.model.num_heads:
        m.num_kv_heads = TINY_KV_HEADS
    m.max_seq_len = max(128, seq_len)
    m.final_layers = max(1, plan.model.final_layers // 3)
    p.data.tokenizer = f"train:{vocab}"
    p.data.seq_len = seq_len
    p.optim.batch_size = batch_size
    for s in p.stages:
        s.layers = max(1, s.layers // 3)
    validate_plan(p, source=p.name)
    return p


def full_depth_baseline(plan: Plan) -> Plan:
    """`plan`'s own baseline: the same model, data and optimizer at its final depth, every
    layer (and the embeddings and head) trained from the first step, one stage as long as
    the whole plan, so the schedule comparison is like for like."""
    p = copy.deepcopy(plan)
    final = plan.model.final_layers
    p.name = plan.name + "-baseline"
    p.description = f"{plan.name} at its final depth ({final} layers), all trained, one stage"
    p.stages = [Stage(f"full-{final}", final, plan.total_steps, enter="init", train="all")]
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
class PlanPair:
    """One family's two plans: the grown schedule and the baseline its speedups are against."""

    family: str  # "bert" | "llama"
    grown: Plan
    base: Plan
    grown_tag: str  # the configs' `plan` and label prefix: "mslt", "llama"
    base_tag: str  # "baseline", "llama-base"
    paths: dict[str, str]  # tag → where the plan came from


def plan_pairs(
    families: list[str],
    bert: tuple[Path, Path],
    llama: Path,
    tiny: bool,
    batch_size: int | None,
    seq_len: int | None,
) -> list[PlanPair]:
    """The plans each requested family times. BERT: the MSLT plan and its baseline file.
    Llama: the grown plan and its own full-depth baseline (`full_depth_baseline`), derived
    after shrinking and overriding so that the two always share model, data and batch."""
    out: list[PlanPair] = []
    for family in families:
        if family == "bert":
            plans = [load_plan(bert[0]), load_plan(bert[1])]
            if tiny:
                plans = [tiny_plan(p) for p in plans]
            grown, base = (override(p, batch_size, seq_len) for p in plans)
            paths = {"mslt": str(bert[0]), "baseline": str(bert[1])}
            out.append(PlanPair("bert", grown, base, "mslt", "baseline", paths))
        elif family == "llama":
            grown = load_plan(llama)
            grown = override(tiny_plan(grown) if tiny else grown, batch_size, seq_len)
            paths = {"llama": str(llama), "llama-base": f"{llama} at full depth, all trained"}
            pair = PlanPair(
                "llama", grown, full_depth_baseline(grown), "llama", "llama-base", paths
            )
            out.append(pair)
        else:
            raise SystemExit(f"gpu_check: unknown plan family {family!r} (bert, llama)")
    return out


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
    # the compiled twin (bench/gpu/gpu_compiled.py): its step times, its warm-up, what it compiled
    compiled_ms: list[float] = field(default_factory=list)
    paired_eager_ms: list[float] = field(default_factory=list)  # eager, in the twin's rounds
    compile_s: float | None = None  # the first compiled step, synchronized: the compile
    compile_graphs: int | None = None  # graphs dynamo compiled in that warm-up (0: reused)
    compile_status: str = "off"  # "timed", or "not compiled: <why>"


def build_configs(tag: str, plan: Plan, data: TokenBlocks, device: torch.device) -> list[Config]:
    """Walk the plan's operators on one model, as the engine does; snapshot a configured
    copy per stage.

    The operator is the engine's own (backend/loop/operators.py `apply_operator`:
    `stack_layers(model, k, source, init)` for a stack, level snapshots for coalesce
    and its partners) and the trainable set is `trainable_layer_ids` of the depth
    before it (a middle stack trains the inserted copies, not the top). Growth
    recipes that change the forward per step (`ramp_steps` gates, `layer_drop`) are
    not installed here, so a plan using them is refused rather than timed wrongly.
    """
    shapes = resolve_shapes(plan)
    torch.manual_seed(plan.seed)
    model = build_model(plan.model, plan.stages[0].layers, data.tokenizer)
    levels: dict[int, LevelSnapshot] = {}
    configs: list[Config] = []
    for index, (stage, shape) in enumerate(zip(plan.stages, shapes, strict=True)):
        if stage.enter == "probe" or stage.ramp_steps is not None or stage.layer_drop > 0:
            raise SystemExit(
                f"gpu_check: stage {stage.name}: probe stages, ramp_steps and layer_drop "
                "are not timed here (their step is not the plain staged step)"
            )
        depth_before = len(get_layers(model)) if index > 0 else 0
        grown = apply_operator(GrowInput(model, stage, shape, plan.model.family, levels))
        model, levels = grown.model, grown.levels
        trainable = trainable_layer_ids(stage, depth_before)
        m = copy.deepcopy(model).to(device)
        result = apply_freeze(m, trainable, stage.embeddings_trainable(), stage.head_trainable())
        depth = len(get_layers(m))
        fwd = StagedForward.for_stage(result.trainable_layers, depth, result.embeddings_trainable)
        set_train_modes(m)
        lr = stage.lr if stage.lr is not None else plan.optim.lr
        # the engine's construction (backend/loop/engine.py configure_training): fused on CUDA
        opt = build_optimizer(m, plan.optim, lr, fused=device.type in FUSED_ADAMW_DEVICES)
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
            loss.backward()  # type: ignore[no-untyped-call]
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
            loss.backward()  # type: ignore[no-untyped-call]
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


def fit_steps(
    configs: list[Config],
    step_fns: dict[int, Callable[[], None]],
    clock: Clock,
    warmup: int,
    steps: int,
    rounds: int,
    deadline: float,
    reserve: float = RESERVE_S,
) -> int:
    """Warm every config up (allocator, cuBLAS heuristics, optimizer state), then shrink the
    timed steps per config so that the rounds fit the budget, `reserve` s kept back."""
    warm_ms: dict[int, float] = {}
    for c in configs:
        if warmup > 0:
            warm_ms[id(c)] = min(clock.run(step_fns[id(c)], warmup))
    clock.sync()
    remaining = deadline - time.monotonic() - reserve
    if warm_ms and math.isfinite(remaining):
        per_step_all = sum(warm_ms.values()) / 1e3
        fit = int(0.7 * remaining / max(per_step_all, 1e-6))
        if fit < steps:
            new = max(rounds, fit)
            print(
                f"gpu_check: budget: {steps} steps per config would take ~{steps * per_step_all:.0f} s; timing {new}"
            )
            return new
    return steps


def timed_rounds(
    configs: list[Config],
    step_fns: dict[int, Callable[[], None]],
    clock: Clock,
    device: torch.device,
    steps: int,
    rounds: int,
    deadline: float,
    margin: float = 25.0,
) -> tuple[int, int]:
    """The interleaved A/B rounds, none started within `margin` s of the deadline but the
    first; (rounds done, peak bytes allocated)."""
    cuda = device.type == "cuda"
    per_round = [steps // rounds + (1 if i < steps % rounds else 0) for i in range(rounds)]
    peak_mem = torch.cuda.max_memory_allocated(device) if cuda else 0  # incl. warm-up
    done = 0
    for rnd, n in enumerate(per_round):
        if rnd > 0 and time.monotonic() > deadline - margin:
            print(f"gpu_check: budget reached: stopping after {rnd} of {rounds} rounds")
            break
        order = configs if rnd % 2 == 0 else list(reversed(configs))
        for c in order:
            if cuda:
                torch.cuda.synchronize()
                resident = torch.cuda.memory_allocated(device)
                torch.cuda.reset_peak_memory_stats(device)
            c.times_ms.extend(clock.run(step_fns[id(c)], n))
            if cuda:
                chunk_peak = torch.cuda.max_memory_allocated(device)
                c.extra_mem = max(c.extra_mem, chunk_peak - resident)
                peak_mem = max(peak_mem, chunk_peak)
        done += 1
    return done, peak_mem
