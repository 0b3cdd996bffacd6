"""Time every stage configuration of an MSLT plan against the full-depth baseline step.

For each stage of the MSLT plan (sample_plans/mslt-bert-base.toml) and the
baseline plan's single 12-layer all-trained stage, this builds the model the
way the stage engine does (build_model → stack_layers → apply_freeze →
StagedForward.for_stage → build_optimizer, frozen layers in eval mode) and
times full training steps (forward, backward, grad clip, AdamW step) on real
batches of the built-in corpus. The configurations are interleaved A/B in
rounds to cancel drift (clocks, thermals, other tenants); each row reports the
median of per-step times (CUDA events on GPU, perf_counter on CPU).

Next to the measured speedup over the baseline step it prints the cost
model's prediction (methods.md §6, `growcockpit.plan.estimate_cost`) with r
(backward/forward of one middle block) and h (head forward in block units)
measured on the spot, as methods.md §6 recommends, and the textbook r = 2.

    python bench/gpu_check.py                 # BERT-Base plans, CUDA if present
    python bench/gpu_check.py --tiny          # small model, CPU-friendly (< 1 min)
    bash bench/gpu_check.sh                   # the GPU machine's entry point

The last line is a one-line summary (`gpu_check: ...`) for logs.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import os
import platform
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

import torch  # noqa: E402
from torch import nn  # noqa: E402

from growcockpit.backend.calibrate import Clock, autocast_for, measure_r_h  # noqa: E402
from growcockpit.backend.data import Batch, TokenBlocks, load_blocks  # noqa: E402
from growcockpit.backend.device import prepare_device  # noqa: E402
from growcockpit.backend.forward import StagedForward  # noqa: E402
from growcockpit.backend.model import build_model  # noqa: E402
from growcockpit.backend.optim import build_optimizer  # noqa: E402
from growcockpit.backend.step import resolve_precision  # noqa: E402
from growcockpit.grow import apply_freeze, get_layers, set_train_modes, stack_layers  # noqa: E402
from growcockpit.plan import estimate_cost, load_plan, validate_plan  # noqa: E402
from growcockpit.plan.cost import default_head_cost  # noqa: E402
from growcockpit.plan.shapes import resolve_shapes  # noqa: E402
from growcockpit.plan.types import Plan  # noqa: E402

MSLT_PLAN = REPO / "sample_plans" / "mslt-bert-base.toml"
BASELINE_PLAN = REPO / "sample_plans" / "baseline-bert-base.toml"
# H200 dense bf16 matmul peak measured on the test machine (NOTES.md), for MFU
PEAK_BF16_TFLOPS = 790.0


# ---- plans ---------------------------------------------------------------------------
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


# ---- configurations ------------------------------------------------------------------
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
        opt = build_optimizer(m, plan.optim, stage.lr if stage.lr is not None else plan.optim.lr)
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


# ---- timing --------------------------------------------------------------------------
def make_step(cfg: Config, batches: list[Batch], amp: Any, grad_clip: float) -> Any:
    """One training step as `Trainer.train_step` does it (minus data loading and events)."""
    state = {"i": 0}

    def step() -> None:
        batch = batches[state["i"] % len(batches)]
        state["i"] += 1
        with amp():
            loss = cfg.forward.loss(cfg.model, batch)
        if loss.requires_grad:
            loss.backward()
            if grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(cfg.params, grad_clip)
            cfg.optimizer.step()
            cfg.optimizer.zero_grad(set_to_none=True)

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
            if grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(cfg.params, grad_clip)
            cfg.optimizer.step()
            cfg.optimizer.zero_grad(set_to_none=True)
        clock.sync()
        t3 = time.perf_counter()
        parts["fwd_ms"].append((t1 - t0) * 1e3)
        parts["bwd_ms"].append((t2 - t1) * 1e3)
        parts["opt_ms"].append((t3 - t2) * 1e3)
    return {k: statistics.median(v) for k, v in parts.items()}


class UtilSampler:
    """pynvml GPU utilisation/power sampled on a thread, attributed to the config stepping now."""

    def __init__(self, device: torch.device, interval_s: float = 0.05) -> None:
        from growcockpit.metrics.system import GpuProbe

        self.probe = GpuProbe()
        self.unavailable = self.probe.unavailable
        self.index = 0
        if device.type == "cuda" and not self.unavailable:
            visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
            idx = device.index or 0
            try:  # NVML numbers GPUs physically; torch numbers the visible ones
                self.index = int(visible[idx]) if visible[0] else idx
            except (ValueError, IndexError):
                self.index = idx
            self.index = min(self.index, max(0, len(self.probe.handles) - 1))
        self.cuda = device.type == "cuda"
        self.interval_s = interval_s
        self.current: Config | None = None
        self.all_util: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        if not self.unavailable and self.cuda:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            cfg = self.current
            if cfg is None:
                continue
            try:
                stats = self.probe.sample()
                stat = stats[self.index]
            except Exception:
                continue
            if stat.util is not None:
                cfg.util.append(stat.util)
                self.all_util.append(stat.util)
            if stat.power_w is not None:
                cfg.power.append(stat.power_w)


# ---- FLOPs (for MFU) -----------------------------------------------------------------
def step_flops(plan: Plan, cfg: Config, batch_size: int, seq_len: int) -> float:
    """Model FLOPs actually needed by a step: frozen blocks forward only, trained ones ×3.

    Block forward = 2·tokens·(4d² + 2d·FFN) + 4·tokens·seq·d (attention scores and values);
    head forward (BERT, masked positions) = 2·masked·(d² + d·V). Backward = 2× forward.
    The lowest trainable block's input gradient is counted (it is computed).
    """
    d, ffn = plan.model.hidden_size, plan.model.intermediate_size
    tokens = batch_size * seq_len
    block = 2 * tokens * (4 * d * d + 2 * d * ffn) + 4 * tokens * seq_len * d
    vocab = default_vocab(plan)
    rows = tokens * (plan.data.mlm_probability if plan.model.family == "bert" else 1.0)
    head = 2 * rows * (d * d + d * vocab) if plan.model.family == "bert" else 2 * rows * d * vocab
    k = len(cfg.trainable)
    if cfg.embeddings_trainable:
        blocks = 3 * cfg.depth * block
    else:
        blocks = (cfg.depth - k) * block + 3 * k * block
    return blocks + 3 * head


def default_vocab(plan: Plan) -> int:
    from growcockpit.plan.cost import vocab_size

    return vocab_size(plan)


# ---- main ----------------------------------------------------------------------------
def fallback_texts_if_no_datasets() -> str | None:
    """The GPU machine may lack `datasets` (or hold a lone wheel of it that cannot import):
    backend/corpus.py then reads the plain-text corpus directly; say so."""
    try:
        import datasets  # noqa: F401
    except Exception as exc:
        return (
            f"`datasets` unusable ({type(exc).__name__}): reading the corpus text files directly "
            "(same lines)"
        )
    return None


def pick_device(requested: str | None) -> torch.device:
    if requested:
        return prepare_device(torch.device(requested))
    return prepare_device(torch.device("cuda" if torch.cuda.is_available() else "cpu"))


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def fmt_mem(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mslt", type=Path, default=MSLT_PLAN, help="MSLT plan (default: %(default)s)")
    ap.add_argument(
        "--baseline", type=Path, default=BASELINE_PLAN, help="baseline plan (one all-trained stage)"
    )
    ap.add_argument(
        "--tiny", action="store_true", help="hidden 64 / 4 heads / FFN 256, depths ÷3: a CPU test"
    )
    ap.add_argument(
        "--steps", type=int, default=None, help="timed steps per stage config (default 100; tiny 4)"
    )
    ap.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="untimed steps per config first (default 3; tiny 1)",
    )
    ap.add_argument(
        "--rounds", type=int, default=None, help="interleaved A/B rounds (default 5; tiny 2)"
    )
    ap.add_argument("--batch-size", type=int, default=None, help="override optim.batch_size")
    ap.add_argument("--seq-len", type=int, default=None, help="override data.seq_len")
    ap.add_argument("--device", default=None, help="cuda, cuda:1, cpu (default: cuda if available)")
    ap.add_argument(
        "--dtype",
        choices=("bf16", "fp16", "fp32"),
        default=None,
        help="autocast (default: the plan's optim.precision; auto = bf16 on GPU, fp32 on CPU)",
    )
    ap.add_argument(
        "--budget-s", type=float, default=None, help="wall-clock budget; steps shrink to fit"
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPU threads (default: torch's; 1 with --tiny on CPU)",
    )
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    args = ap.parse_args(argv)
    t_start = time.monotonic()
    deadline = t_start + args.budget_s if args.budget_s else math.inf

    device = pick_device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print(f"gpu_check: --device {device} but CUDA is not available", file=sys.stderr)
        return 2
    steps = args.steps or (4 if args.tiny else 100)
    warmup = args.warmup if args.warmup is not None else (1 if args.tiny else 3)
    rounds = max(1, min(args.rounds or (2 if args.tiny else 5), steps))
    threads = args.threads or (1 if args.tiny and device.type == "cpu" else None)
    if threads:  # on a shared 2-core box, 2 OpenMP threads run ~10x slower than 1 when the other core is busy
        torch.set_num_threads(threads)
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")  # TF32; only matters for --dtype fp32

    import transformers

    transformers.utils.logging.set_verbosity_error()
    plans = {"mslt": load_plan(args.mslt), "baseline": load_plan(args.baseline)}
    if args.tiny:
        plans = {k: tiny_plan(p) for k, p in plans.items()}
    plans = {k: override(p, args.batch_size, args.seq_len) for k, p in plans.items()}
    mslt, base = plans["mslt"], plans["baseline"]
    dtype = args.dtype or resolve_precision(mslt.optim.precision, device)
    if base.stages[-1].layers != mslt.model.final_layers or len(base.stages) != 1:
        print(
            "gpu_check: the baseline plan should be one all-trained stage at the MSLT plan's final depth",
            file=sys.stderr,
        )
    if (mslt.model, mslt.data, mslt.optim.batch_size) != (
        base.model,
        base.data,
        base.optim.batch_size,
    ):
        print(
            "gpu_check: warning: the two plans differ in model/data/batch; the comparison is not like for like"
        )

    print(
        f"gpu_check: device {device_name(device)} ({device}), dtype {dtype}, torch {torch.__version__}"
        + (f", CUDA {torch.version.cuda}" if device.type == "cuda" else "")
    )
    if device.type != "cuda":
        print(
            "gpu_check: no GPU in use: running on CPU (speedups are CPU speedups; r is ~1 here, ~2 on GPUs)"
        )
    note = fallback_texts_if_no_datasets()
    if note:
        print(f"gpu_check: {note}")

    t = time.monotonic()
    data = load_blocks(mslt.data, mslt.model.family, mslt.seed)
    bs, seq = mslt.optim.batch_size, mslt.data.seq_len
    tokens_per_step = bs * seq
    print(
        f"gpu_check: data {mslt.data.source} ({data.train.shape[0]} blocks of {seq}), vocab {data.vocab_size}, "
        f"batch {bs} × {seq} = {tokens_per_step} tokens/step, loaded in {time.monotonic() - t:.1f} s"
    )
    # real batches, built on the host and moved before timing (the engine builds them
    # synchronously inside each step; that host time is reported separately below)
    n_batches = max(2, min(8, steps))
    t = time.perf_counter()
    host_batches = [data.train_batch(i, bs) for i in range(n_batches)]
    data_ms = (time.perf_counter() - t) * 1e3 / n_batches
    batches = [Batch(b.input_ids.to(device), b.labels.to(device)) for b in host_batches]

    t = time.monotonic()
    configs = build_configs("baseline", base, data, device) + build_configs(
        "mslt", mslt, data, device
    )
    baseline = configs[0]
    print(f"gpu_check: built {len(configs)} stage configs in {time.monotonic() - t:.1f} s")
    clock = Clock(device)
    amp = lambda: autocast_for(device, dtype)  # noqa: E731

    # r and h on the baseline model's middle block and head
    rh = measure_r_h(
        baseline.model,
        mslt.model.family,
        batches[0],
        amp,
        clock,
        reps=3 if args.tiny else 5,
        inner=2 if args.tiny else 10,
    )
    r, h = rh["r"], rh["h"]
    h_model = default_head_cost(mslt)
    print(
        f"gpu_check: block fwd {rh['block_fwd_ms']:.2f} ms, fwd+bwd {rh['block_fwd_bwd_ms']:.2f} ms → r = {r:.2f}; "
        f"no_grad fwd {rh['nograd_over_grad_fwd']:.2f}×, frozen (eval+no_grad) fwd "
        f"{rh['frozen_over_grad_fwd']:.2f}× the training fwd; head fwd {rh['head_fwd_ms']:.2f} ms → "
        f"h = {h:.2f} blocks (analytic {h_model:.2f})"
    )

    # warm-up: allocator, cuBLAS heuristics, optimizer state
    grad_clip = mslt.optim.grad_clip
    step_fns = {id(c): make_step(c, batches, amp, grad_clip) for c in configs}
    warm_ms: dict[int, float] = {}
    for c in configs:
        if warmup > 0:
            warm_ms[id(c)] = min(clock.run(step_fns[id(c)], warmup))
    if device.type == "cuda":
        torch.cuda.synchronize()
    remaining = deadline - time.monotonic() - 20.0  # keep time for the report and teardown
    if warm_ms and math.isfinite(remaining):
        per_step_all = sum(warm_ms.values()) / 1e3
        fit = int(0.8 * remaining / max(per_step_all, 1e-6))
        if fit < steps:
            new = max(rounds, fit)
            print(
                f"gpu_check: budget: {steps} steps per config would take ~{steps * per_step_all:.0f} s; timing {new}"
            )
            steps = new

    per_round = [steps // rounds + (1 if i < steps % rounds else 0) for i in range(rounds)]
    sampler = UtilSampler(device)
    sampler.start()
    peak_mem = (
        torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
    )  # incl. warm-up
    done_rounds = 0
    for rnd, n in enumerate(per_round):
        if rnd > 0 and time.monotonic() > deadline - 20.0:
            print(f"gpu_check: budget reached: stopping after {rnd} of {rounds} rounds")
            break
        order = configs if rnd % 2 == 0 else list(reversed(configs))
        for c in order:
            if device.type == "cuda":
                torch.cuda.synchronize()
                resident = torch.cuda.memory_allocated(device)
                torch.cuda.reset_peak_memory_stats(device)
            sampler.current = c
            c.times_ms.extend(clock.run(step_fns[id(c)], n))
            sampler.current = None
            if device.type == "cuda":
                chunk_peak = torch.cuda.max_memory_allocated(device)
                c.extra_mem = max(c.extra_mem, chunk_peak - resident)
                peak_mem = max(peak_mem, chunk_peak)
        done_rounds += 1
    sampler.stop()
    # where the time goes (a separate, synchronized pass: not used for the speedups)
    n_parts = max(1, min(2 if args.tiny else 5, steps))
    if (
        time.monotonic() + n_parts * sum(statistics.median(c.times_ms) for c in configs) / 1e3
        < deadline - 20.0
    ):
        for c in configs:
            c.parts = breakdown(c, batches, amp, grad_clip, clock, n_parts)

    # ---- report ----------------------------------------------------------------------
    cost = estimate_cost(mslt, r=r, h=h)
    cost_textbook = estimate_cost(mslt, r=2.0, h=h_model)
    base_ms = statistics.median(baseline.times_ms)
    rows: list[dict[str, Any]] = []
    for c in configs:
        ms = statistics.median(c.times_ms)
        if c.plan == "mslt":
            rel = cost.stages[c.stage_index].rel_step_cost
            rel2 = cost_textbook.stages[c.stage_index].rel_step_cost
        else:
            rel = rel2 = 1.0
        measured = base_ms / ms if ms > 0 else 0.0
        predicted = 1.0 / rel if rel > 0 else 0.0
        flops = step_flops(mslt, c, bs, seq)
        tflops = flops / (ms / 1e3) / 1e12 if ms > 0 else 0.0
        rows.append(
            {
                "config": c.label,
                "plan": c.plan,
                "stage": c.stage_index + 1,
                "name": c.name,
                "steps_in_plan": c.steps_in_plan,
                "depth": c.depth,
                "trainable_layers": c.trainable,
                "embeddings_trainable": c.embeddings_trainable,
                "frozen_prefix": c.forward.frozen_prefix,
                "timed_steps": len(c.times_ms),
                "step_ms": ms,
                "step_ms_p10": _quantile(c.times_ms, 0.1),
                "step_ms_p90": _quantile(c.times_ms, 0.9),
                "tokens_per_s": tokens_per_step / (ms / 1e3) if ms > 0 else 0.0,
                "measured_speedup": measured,
                "model_speedup": predicted,
                "model_speedup_r2": 1.0 / rel2 if rel2 > 0 else 0.0,
                "measured_over_model": measured / predicted if predicted > 0 else 0.0,
                "tflops": tflops,
                "mfu": tflops / PEAK_BF16_TFLOPS if device.type == "cuda" else None,
                "gpu_util_mean": statistics.fmean(c.util) if c.util else None,
                "gpu_power_w_mean": statistics.fmean(c.power) if c.power else None,
                "extra_mem_bytes": c.extra_mem if device.type == "cuda" else None,
                **c.parts,
            }
        )

    def trainable_text(c: dict[str, Any]) -> str:
        ids = c["trainable_layers"]
        txt = "all" if len(ids) == c["depth"] else (f"{ids[0]}-{ids[-1]}" if ids else "none")
        return txt + ("+emb" if c["embeddings_trainable"] else "")

    head = (
        f"{'stage':<22} {'depth':>5} {'trainable':>10} {'tok/s':>10} {'step ms':>9} {'p10-p90':>13} "
        f"{'speedup':>8} {'model':>7} {'meas/mod':>8} {'r=2':>6} {'util%':>6} {'+mem':>9} {'MFU':>6}"
    )
    print()
    print(
        f"Per-step cost of every stage config vs the baseline step ({baseline.label}: {base_ms:.2f} ms),"
    )
    print(
        f"medians of {len(baseline.times_ms)} steps per config over {done_rounds} interleaved rounds;"
    )
    print(
        f"model = methods.md §6 with measured r = {r:.2f}, h = {h:.2f}; r=2 column: textbook r = 2, analytic h = {h_model:.2f}"
    )
    print(head)
    print("-" * len(head))
    for row in rows:
        util = f"{row['gpu_util_mean']:.0f}" if row["gpu_util_mean"] is not None else "n/a"
        mem = fmt_mem(row["extra_mem_bytes"]) if row["extra_mem_bytes"] is not None else "n/a"
        mfu = f"{100 * row['mfu']:.1f}%" if row["mfu"] is not None else "-"
        spread = f"{row['step_ms_p10']:.1f}-{row['step_ms_p90']:.1f}"
        print(
            f"{row['config']:<22} {row['depth']:>5} {trainable_text(row):>10} {row['tokens_per_s']:>10.0f} "
            f"{row['step_ms']:>9.2f} {spread:>13} {row['measured_speedup']:>7.2f}x {row['model_speedup']:>6.2f}x "
            f"{row['measured_over_model']:>8.2f} {row['model_speedup_r2']:>5.2f}x {util:>6} {mem:>9} {mfu:>6}"
        )
    print()
    if all(c.parts for c in configs):
        print(
            f"Breakdown (median of {n_parts} steps, synchronized between phases; opt = clip + AdamW step + zero_grad):"
        )
        print(f"{'stage':<22} {'fwd ms':>9} {'bwd ms':>9} {'opt ms':>9} {'opt share':>9}")
        for c in configs:
            total = sum(c.parts.values())
            print(
                f"{c.label:<22} {c.parts['fwd_ms']:>9.2f} {c.parts['bwd_ms']:>9.2f} {c.parts['opt_ms']:>9.2f} "
                f"{100 * c.parts['opt_ms'] / total if total > 0 else 0:>8.0f}%"
            )
        print()

    # whole schedule, steps-weighted
    m_rows = [row for row in rows if row["plan"] == "mslt"]
    total_steps = sum(row["steps_in_plan"] for row in m_rows)
    mslt_time = sum(row["steps_in_plan"] * row["step_ms"] for row in m_rows)
    base_total_steps = base.total_steps
    schedule_speedup = (base_total_steps * base_ms) / mslt_time if mslt_time > 0 else 0.0
    print(
        f"schedule: MSLT {total_steps} steps ≈ {mslt_time / 1e3:.1f} s vs baseline {base_total_steps} steps ≈ "
        f"{base_total_steps * base_ms / 1e3:.1f} s → measured speedup {schedule_speedup:.2f}x "
        f"(model {cost.speedup:.2f}x with r = {r:.2f}, h = {h:.2f}; {cost_textbook.speedup:.2f}x with r = 2, h = {h_model:.2f})"
    )
    if base_total_steps != total_steps:
        print(f"  note: the plans' total steps differ ({total_steps} vs {base_total_steps})")
    if sampler.unavailable:
        print("GPU util: n/a (no NVML)")
    elif device.type != "cuda":
        print("GPU util: n/a (running on CPU)")
    elif sampler.all_util:
        print(
            f"GPU util: mean {statistics.fmean(sampler.all_util):.0f}% over {len(sampler.all_util)} NVML samples during the timed loops"
        )
    else:
        print("GPU util: n/a (no samples: the timed loops were too short)")
    if device.type == "cuda":
        print(
            f"peak memory: {fmt_mem(peak_mem)} allocated (all {len(configs)} configs resident; +mem column = extra while stepping)"
        )
    print(
        f"host data: train_batch {data_ms:.1f} ms per batch of {bs} (built synchronously in engine.train_step, "
        f"not included above; {100 * data_ms / base_ms:.0f}% of a baseline step)"
    )

    # the last frozen-bottom stage is the headline (stage 4 = grow-12 for the BERT-Base plan)
    frozen_rows = [row for row in m_rows if len(row["trainable_layers"]) < row["depth"]]
    key = frozen_rows[-1] if frozen_rows else m_rows[-1]
    elapsed = time.monotonic() - t_start
    summary = (
        f"gpu_check: stage{key['stage']}_speedup={key['measured_speedup']:.2f}x (model {key['model_speedup']:.2f}x) "
        f"schedule_speedup={schedule_speedup:.2f}x (model {cost.speedup:.2f}x) r={r:.2f} h={h:.2f} "
        f"baseline={tokens_per_step / (base_ms / 1e3):.0f}tok/s elapsed={elapsed:.0f}s device={device_name(device)}"
    )
    if args.json:
        result = {
            "device": str(device),
            "device_name": device_name(device),
            "dtype": dtype,
            "torch": torch.__version__,
            "tiny": args.tiny,
            "plans": {"mslt": str(args.mslt), "baseline": str(args.baseline)},
            "batch_size": bs,
            "seq_len": seq,
            "tokens_per_step": tokens_per_step,
            "steps_per_config": len(baseline.times_ms),
            "rounds": done_rounds,
            "r_h": rh,
            "h_analytic": h_model,
            "rows": rows,
            "schedule": {
                "measured_speedup": schedule_speedup,
                "model_speedup": cost.speedup,
                "model_speedup_r2": cost_textbook.speedup,
                "mslt_seconds": mslt_time / 1e3,
                "baseline_seconds": base_total_steps * base_ms / 1e3,
            },
            "gpu_util_mean": statistics.fmean(sampler.all_util) if sampler.all_util else None,
            "gpu_util_unavailable": sampler.unavailable,
            "peak_memory_bytes": peak_mem if device.type == "cuda" else None,
            "host_data_ms_per_batch": data_ms,
            "elapsed_s": elapsed,
            "summary": summary,
            "mslt_plan": dataclasses.asdict(mslt),
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2, default=str))
        print(f"results: {args.json}")
    print(summary)
    return 0


def _quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return 0.0
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


if __name__ == "__main__":
    sys.exit(main())
