"""Time every stage configuration of the grown plans against their full-depth baselines.

Two families, each against its own baseline (`--plans bert,llama`, default both):

* BERT: every stage of the MSLT plan (sample_plans/mslt-bert-base.toml,
  3 → 6 → 9 → 12, the top copies training) against the baseline plan's single
  12-layer all-trained stage (sample_plans/baseline-bert-base.toml).
* Llama: every stage of sample_plans/llama-smollm-135m.toml (SmolLM-135M's
  shape: 576 wide, 9 heads sharing 3 kv heads, SwiGLU, untied head; grown
  10 → 20 → 30 by middle stacking with zeroed output projections, then all
  layers) against the same model at 30 layers, every layer trained, one stage:
  a copy of the plan itself (gpu_configs.py `full_depth_baseline`), not a file.

Each configuration is built the way the stage engine builds it (the engine's
operator table, so a stack's `source` and `init` act as in training) and the
engine's training step is timed on real batches of the built-in corpus
(bench/gpu_configs.py: `picked` positions, fused AdamW on CUDA, the guarded
update). The configurations are interleaved A/B in rounds to cancel drift
(clocks, thermals, other tenants); each row reports the median of per-step
times (CUDA events on GPU, perf_counter on CPU). `--budget-s` is shared: each
family gets an even share of what is left when it starts.

Next to the measured speedup over the baseline step it prints the cost
model's prediction (`growcockpit.plan.estimate_cost`) with r
(backward/forward of one middle block) and h (head forward in block units)
measured on the spot, and the textbook r = 2. A second table sets each step
against this device's roofline (bench/gpu_roofline.py: peak matmul TFLOP/s and
copy GB/s measured on the spot, FLOPs per step as the family has them — Llama's
SwiGLU at three FFN matrices, its K/V at the kv heads' width, its untied head's
weight gradient when it trains — and a byte lower bound): bound ms, measured /
bound, TFLOP/s, MFU, GPU utilisation over one ≥ 2 s window per configuration
and the profiler's busy share (CUDA only), extra memory; then the fwd/bwd/opt
split.

    python bench/gpu_check.py                 # BERT-Base and SmolLM-shaped plans, CUDA (exit 3 without it)
    python bench/gpu_check.py --plans llama   # one family only
    python bench/gpu_check.py --tiny          # small models, CPU-friendly (< 1 min)
    bash bench/gpu_check.sh                   # the GPU machine's entry point

`compile = true` is not timed here (the step is eager). The last line is a
one-line summary (`gpu_check: ...`): BERT's figures, then `llama: ...`'s, then
the peak, the time taken and the device. `--json` writes every row: BERT's at
the top level, Llama's under "llama".
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
for _path in (REPO, REPO / "bench"):  # run from a checkout without `pip install -e .`
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

import torch  # noqa: E402
from gpu_configs import (  # noqa: E402
    RESERVE_S,
    Config,
    PlanPair,
    breakdown,
    build_configs,
    device_batches,
    fit_steps,
    make_step,
    plan_pairs,
    timed_rounds,
)
from gpu_report import Context, FamilyReport, summary_line, write_json, write_report  # noqa: E402
from gpu_roofline import Peak, UtilSampler, busy_share, measure_peak, util_window  # noqa: E402

from growcockpit.backend.calibrate import Clock, autocast_for, measure_r_h  # noqa: E402
from growcockpit.backend.data.blocks import load_blocks  # noqa: E402
from growcockpit.backend.device import prepare_device, release_cached_memory  # noqa: E402
from growcockpit.backend.loop.step import resolve_precision  # noqa: E402
from growcockpit.plan.cost import default_head_cost  # noqa: E402

MSLT_PLAN = REPO / "sample_plans" / "mslt-bert-base.toml"
BASELINE_PLAN = REPO / "sample_plans" / "baseline-bert-base.toml"
LLAMA_PLAN = REPO / "sample_plans" / "llama-smollm-135m.toml"
FAMILIES = ("bert", "llama")
NO_CUDA_EXIT = 3  # gpu_check.sh exits with it too


def fallback_texts_if_no_datasets() -> str | None:
    """The GPU machine may lack `datasets` (or hold a lone wheel of it that cannot import):
    backend/data/corpus.py then reads the plain-text corpus directly; say so."""
    try:
        import datasets  # noqa: F401
    except Exception as exc:
        return (
            f"`datasets` unusable ({type(exc).__name__}): reading the corpus text files directly "
            "(same lines)"
        )
    return None


def pick_device(requested: str | None) -> torch.device:
    """The requested device (default: CUDA if present), made current (`prepare_device`)."""
    if requested:
        return prepare_device(torch.device(requested))
    return prepare_device(torch.device("cuda" if torch.cuda.is_available() else "cpu"))


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mslt", type=Path, default=MSLT_PLAN, help="MSLT plan (default: %(default)s)")
    ap.add_argument(
        "--baseline", type=Path, default=BASELINE_PLAN, help="baseline plan (one all-trained stage)"
    )
    ap.add_argument(
        "--llama",
        type=Path,
        default=LLAMA_PLAN,
        help="Llama plan, timed against itself at full depth, all trained (default: %(default)s)",
    )
    ap.add_argument(
        "--plans",
        default=",".join(FAMILIES),
        help="which families to time, comma-separated: bert, llama (default: %(default)s); "
        "--budget-s is shared between them",
    )
    ap.add_argument(
        "--tiny",
        action="store_true",
        help="hidden 64 / 4 heads (Llama: 2 kv heads), FFN at the plan's ratio, depths ÷3: a CPU test",
    )
    ap.add_argument(
        "--allow-cpu",
        action="store_true",
        help="run the full-size plans on the CPU when CUDA is unavailable (default: exit 3)",
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
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    t_start = time.monotonic()
    deadline = t_start + max(0.0, args.budget_s) if args.budget_s is not None else math.inf
    if args.device is None and not torch.cuda.is_available() and not (args.tiny or args.allow_cpu):
        print(
            f"gpu_check: CUDA is not available (torch {torch.__version__}, built for CUDA "
            f"{torch.version.cuda}): not running the full-size plans on the CPU; pass --tiny or --allow-cpu"
        )
        return NO_CUDA_EXIT
    if args.device and args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"gpu_check: --device {args.device} but CUDA is not available", file=sys.stderr)
        return 2
    families = list(dict.fromkeys(f.strip() for f in args.plans.split(",") if f.strip()))
    if not families or set(families) - set(FAMILIES):
        print(
            f"gpu_check: --plans {args.plans!r}: name some of {', '.join(FAMILIES)}",
            file=sys.stderr,
        )
        return 2
    device = pick_device(args.device)
    cuda = device.type == "cuda"
    steps = args.steps or (4 if args.tiny else 100)
    warmup = args.warmup if args.warmup is not None else (1 if args.tiny else 3)
    rounds = max(1, min(args.rounds or (2 if args.tiny else 5), steps))
    threads = args.threads or (1 if args.tiny and not cuda else None)
    if threads:  # on a shared 2-core box, 2 OpenMP threads run ~10x slower than 1 when the other core is busy
        torch.set_num_threads(threads)
    if cuda:
        torch.set_float32_matmul_precision("high")  # TF32; only matters for --dtype fp32

    import transformers

    transformers.utils.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    pairs = plan_pairs(
        families,
        (args.mslt, args.baseline),
        args.llama,
        args.tiny,
        args.batch_size,
        args.seq_len,
    )
    print(
        f"gpu_check: device {device_name(device)} ({device}), torch {torch.__version__}"
        + (f", CUDA {torch.version.cuda}" if cuda else "")
        + f"; plans: {', '.join(p.family for p in pairs)}"
    )
    if not cuda:
        print(
            "gpu_check: no GPU in use: running on CPU (speedups are CPU speedups; r is ~1 here, ~2 on GPUs)"
        )
    note = fallback_texts_if_no_datasets()
    if note:
        print(f"gpu_check: {note}")
    peak = measure_peak(device, budget_s=2.0 if args.tiny else 6.0)
    print(
        f"gpu_check: measured peak {peak.tflops:.3g} TFLOP/s ({peak.dtype} matmul {peak.size}³), "
        f"copy {peak.gbps:.0f} GB/s, in {peak.seconds:.1f} s"
    )
    reports: list[FamilyReport] = []
    for i, pair in enumerate(pairs):
        # what the budget leaves for timing is shared out evenly among the families still
        # to come, each keeping the reserve behind its share; what one does not use (the
        # reserve, on the CPU, where there are no extras) goes to the next
        usable = max(0.0, deadline - time.monotonic() - RESERVE_S)
        share = time.monotonic() + usable / (len(pairs) - i) + RESERVE_S
        ctx = measure_family(args, pair, device, peak, (steps, warmup, rounds), share)
        reports.append(write_report(ctx))
        del ctx  # its models and optimizers: the next family gets the whole device
        release_cached_memory(device)
    print("compile: not timed (eager steps only; compile per block is not part of this check yet)")
    elapsed = time.monotonic() - t_start
    summary = summary_line(reports, peak, elapsed, device_name(device))
    if args.json:
        common = {
            "device": str(device),
            "device_name": device_name(device),
            "torch": torch.__version__,
            "tiny": args.tiny,
            "peak": dataclasses.asdict(peak),
            "compile": None,
            "elapsed_s": elapsed,
        }
        write_json(args.json, common, reports, summary)
    print(summary)
    return 0


def measure_family(
    args: argparse.Namespace,
    pair: PlanPair,
    device: torch.device,
    peak: Peak,
    counts: tuple[int, int, int],
    deadline: float,
) -> Context:
    """Build and time one family's configurations (its baseline's first) within `deadline`:
    r and h, the interleaved rounds, the utilisation windows and busy share, the split."""
    t_family = time.monotonic()
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
    return Context(
        args=args,
        device=device,
        device_label=device_name(device),
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


if __name__ == "__main__":
    sys.exit(main())
