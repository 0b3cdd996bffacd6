"""One family's measurements for the GPU check (bench/gpu/gpu_check.py shares out the budget).

`measure_family` loads the family's data, builds its configurations (baseline
first), measures r and h, times the eager step in interleaved rounds, then, while
its part of the budget lasts, the extras (utilisation windows, busy share), the
fwd/bwd/opt split and the compiled pass (bench/gpu/gpu_compiled.py). The eager work
ends by the eager deadline, so that the compiled pass keeps its share.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import torch
from gpu_compiled import CompileMode, compiled_pass, eager_deadline
from gpu_configs import (
    Config,
    PlanPair,
    breakdown,
    build_configs,
    device_batches,
    fit_steps,
    make_step,
    timed_rounds,
)
from gpu_report import Context
from gpu_roofline import Peak, UtilSampler, busy_share, util_window

from growcockpit.backend.calibrate import Clock, autocast_for, measure_r_h
from growcockpit.backend.data.blocks import load_blocks
from growcockpit.backend.loop.block_compile import BlockCompiler
from growcockpit.backend.loop.step import resolve_precision
from growcockpit.plan.cost import default_head_cost


def measure_family(
    args: argparse.Namespace,
    pair: PlanPair,
    device: torch.device,
    device_label: str,
    peak: Peak,
    counts: tuple[int, int, int],
    deadline: float,
    compiling: tuple[CompileMode, BlockCompiler | None],
) -> Context:
    """Build and time one family's configurations (its baseline's first) within `deadline`:
    r and h, the interleaved rounds, the utilisation windows and busy share, the split by
    the eager deadline (`eager_deadline`), then the compiled pass in what is left."""
    t_family = time.monotonic()
    mode, compiler = compiling
    family_deadline, deadline = deadline, eager_deadline(t_family, deadline, mode)
    steps, warmup, rounds = counts
    cuda = device.type == "cuda"
    grown, base = pair.grown, pair.base
    dtype = args.dtype or resolve_precision(grown.optim.precision, device)
    if base.stages[-1].layers != grown.model.final_layers or len(base.stages) != 1:
        print(
            f"gpu_check: {pair.family}: the baseline plan should be one all-trained stage at "
            "the grown plan's final depth",
            file=sys.stderr,
        )
    if (grown.model, grown.data, grown.optim.batch_size) != (
        base.model,
        base.data,
        base.optim.batch_size,
    ):
        print(
            f"gpu_check: {pair.family}: warning: the two plans differ in model/data/batch; the "
            "comparison is not like for like"
        )
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    t = time.monotonic()
    data = load_blocks(grown.data, grown.model.family, grown.seed)
    bs, seq = grown.optim.batch_size, grown.data.seq_len
    print(
        f"gpu_check: {pair.family}: {grown.name} on {dtype}; data {grown.data.source} "
        f"({data.train.shape[0]} blocks of {seq}), vocab {data.vocab_size}, "
        f"batch {bs} × {seq} = {bs * seq} tokens/step, loaded in {time.monotonic() - t:.1f} s"
    )
    # real batches, built on the host and moved before timing (the engine prefetches them
    # on a thread; their host cost is reported separately below)
    n_batches = max(2, min(8, steps))
    t = time.perf_counter()
    device_batches(data, n_batches, bs, torch.device("cpu"))
    data_ms = (time.perf_counter() - t) * 1e3 / n_batches
    batches = device_batches(data, n_batches, bs, device)

    t = time.monotonic()
    configs = build_configs(pair.base_tag, base, data, device)
    configs += build_configs(pair.grown_tag, grown, data, device)
    print(
        f"gpu_check: {pair.family}: built {len(configs)} stage configs in "
        f"{time.monotonic() - t:.1f} s"
    )
    clock = Clock(device)
    amp = lambda: autocast_for(device, dtype)  # noqa: E731

    # r and h on the baseline model's middle block and head
    rh = measure_r_h(
        configs[0].model,
        grown.model.family,
        batches[0],
        amp,
        clock,
        reps=3 if args.tiny else 5,
        inner=2 if args.tiny else 10,
    )
    h_model = default_head_cost(grown)
    print(
        f"gpu_check: {pair.family}: block fwd {rh['block_fwd_ms']:.2f} ms, fwd+bwd "
        f"{rh['block_fwd_bwd_ms']:.2f} ms → r = {rh['r']:.2f}; "
        f"no_grad fwd {rh['nograd_over_grad_fwd']:.2f}×, frozen (eval+no_grad) fwd "
        f"{rh['frozen_over_grad_fwd']:.2f}× the training fwd; head fwd {rh['head_fwd_ms']:.2f} ms → "
        f"h = {rh['h']:.2f} blocks (analytic {h_model:.2f})"
    )
    grad_clip = grown.optim.grad_clip
    step_fns = {id(c): make_step(c, batches, amp, grad_clip) for c in configs}
    steps = fit_steps(configs, step_fns, clock, warmup, steps, rounds, deadline)
    done_rounds, peak_mem = timed_rounds(configs, step_fns, clock, device, steps, rounds, deadline)
    sampler = UtilSampler(device)
    extras(configs, step_fns, sampler, device, deadline)
    # where the time goes (a separate, synchronized pass: not used for the speedups)
    n_parts = max(1, min(2 if args.tiny else 5, steps))
    if (
        time.monotonic() + n_parts * sum(statistics.median(c.times_ms) for c in configs) / 1e3
        < deadline - 20.0
    ):
        for c in configs:
            c.parts = breakdown(c, batches, amp, grad_clip, clock, n_parts)
    run = compiled_pass(
        configs,
        batches,
        amp,
        grad_clip,
        clock,
        device,
        (steps, warmup, rounds),
        compiler,
        mode,
        family_deadline,
    )
    return Context(
        args=args,
        device=device,
        device_label=device_label,
        dtype=dtype,
        family=pair.family,
        grown=grown,
        base=base,
        grown_tag=pair.grown_tag,
        base_tag=pair.base_tag,
        paths=pair.paths,
        configs=configs,
        rh=rh,
        h_model=h_model,
        peak=peak,
        sampler=sampler,
        peak_mem=peak_mem,
        rounds=done_rounds,
        n_parts=n_parts,
        data_ms=data_ms,
        elapsed=time.monotonic() - t_family,
        compiled=run,
    )


def extras(
    configs: list[Config],
    step_fns: dict[int, Callable[[], None]],
    sampler: UtilSampler,
    device: torch.device,
    deadline: float,
) -> None:
    """CUDA only, while time is left: GPU utilisation over one ≥ 2 s window per config and the
    profiler's busy share of a few steps."""
    if device.type != "cuda":
        return
    sampler.start()
    try:
        for c in configs:
            if time.monotonic() > deadline - 25.0:
                print("gpu_check: budget: utilisation windows cut short")
                break
            step = step_fns[id(c)]
            util_window(c, step, sampler)
            c.busy = busy_share(step, device)
    finally:
        sampler.stop()
