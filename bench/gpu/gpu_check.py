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
(bench/gpu/gpu_configs.py: `picked` positions, fused AdamW on CUDA, the guarded
update). The configurations are interleaved A/B in rounds to cancel drift
(clocks, thermals, other tenants); each row reports the median of per-step
times (CUDA events on GPU, perf_counter on CPU). `--budget-s` is shared: each
family gets an even share of what is left when it starts.

Next to the measured speedup over the baseline step it prints the cost
model's prediction (`growcockpit.plan.estimate_cost`) with r
(backward/forward of one middle block) and h (head forward in block units)
measured on the spot, and the textbook r = 2. A second table sets each step
against this device's roofline (bench/gpu/gpu_roofline.py: peak matmul TFLOP/s and
copy GB/s measured on the spot, FLOPs per step as the family has them — Llama's
SwiGLU at three FFN matrices, its K/V at the kv heads' width, its untied head's
weight gradient when it trains — and a byte lower bound): bound ms, measured /
bound, TFLOP/s, MFU, GPU utilisation over one ≥ 2 s window per configuration
and the profiler's busy share (CUDA only), extra memory; then the fwd/bwd/opt
split. Then the compiled pass (bench/gpu/gpu_compiled.py, on by default on CUDA when
the budget allows, off on the CPU; `--compile`, `--no-compile`,
`--compile-backend`): every configuration again with its blocks compiled as
`[optim] compile = true` compiles them, eager and compiled twins side by side in
interleaved rounds, each twin's warm-up (its compile) timed apart and counted
against the budget: eager and compiled ms, compiled / eager, measured / bound of
both, the compiled stage speedup over the compiled baseline next to the cost
model's; a row the budget left out says "not compiled: budget". The family
modules: bench/gpu/gpu_family.py measures one family, bench/gpu/gpu_report.py prints it.

    python bench/gpu/gpu_check.py                 # BERT-Base and SmolLM-shaped plans, CUDA (exit 3 without it)
    python bench/gpu/gpu_check.py --plans llama   # one family only
    python bench/gpu/gpu_check.py --tiny          # small models, CPU-friendly (< 1 min)
    python bench/gpu/gpu_check.py --tiny --compile --compile-backend eager  # + the compiled pass (dynamo, fast)
    bash bench/gpu/gpu_check.sh                   # the GPU machine's entry point

The last line is a one-line summary (`gpu_check: ...`): BERT's figures (with
the compiled baseline's tokens/s, compiled / eager and the compile seconds when
the pass timed it), then `llama: ...`'s, then the peak, the time taken and the
device. `--json` writes every row, compiled columns included: BERT's at the top
level, Llama's under "llama".
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# run from a checkout without `pip install -e .`
for _path in (REPO, REPO / "bench", REPO / "bench" / "gpu"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

import torch  # noqa: E402
from gpu_compiled import add_arguments, compile_mode  # noqa: E402
from gpu_configs import RESERVE_S, plan_pairs  # noqa: E402
from gpu_configs import breakdown as breakdown  # noqa: E402  (bench/stage_cost.py uses these)
from gpu_configs import build_configs as build_configs  # noqa: E402
from gpu_configs import make_step as make_step  # noqa: E402
from gpu_family import measure_family  # noqa: E402
from gpu_report import FamilyReport, summary_line, write_json, write_report  # noqa: E402
from gpu_roofline import measure_peak  # noqa: E402

from growcockpit.backend.device import prepare_device, release_cached_memory  # noqa: E402
from growcockpit.backend.loop.block_compile import BlockCompiler  # noqa: E402

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
    add_arguments(ap)
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
    mode = compile_mode(args, device)
    print(f"gpu_check: compiled pass {mode.reason}, backend {mode.backend}")
    # one compiler for the whole run, as the engine keeps one: graphs are per block class
    compiler = BlockCompiler(mode.backend) if mode.wanted else None
    reports: list[FamilyReport] = []
    for i, pair in enumerate(pairs):
        # what the budget leaves for timing is shared out evenly among the families still
        # to come, each keeping the reserve behind its share; what one does not use (the
        # reserve, on the CPU, where there are no extras) goes to the next
        usable = max(0.0, deadline - time.monotonic() - RESERVE_S)
        share = time.monotonic() + usable / (len(pairs) - i) + RESERVE_S
        ctx = measure_family(
            args,
            pair,
            device,
            device_name(device),
            peak,
            (steps, warmup, rounds),
            share,
            (mode, compiler),
        )
        reports.append(write_report(ctx))
        del ctx  # its models and optimizers: the next family gets the whole device
        release_cached_memory(device)
    elapsed = time.monotonic() - t_start
    summary = summary_line(reports, peak, elapsed, device_name(device))
    if args.json:
        common = {
            "device": str(device),
            "device_name": device_name(device),
            "torch": torch.__version__,
            "tiny": args.tiny,
            "peak": dataclasses.asdict(peak),
            "compile": {"wanted": mode.wanted, "backend": mode.backend, "reason": mode.reason},
            "elapsed_s": elapsed,
        }
        write_json(args.json, common, reports, summary)
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
