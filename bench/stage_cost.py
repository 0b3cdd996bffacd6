"""Per-stage step cost of MSLT against the full-depth step, next to the cost model.

Times one training step (forward, backward, grad clip, AdamW step, exactly as
`Trainer.train_step` does it, via bench/gpu/gpu_check.py's config builder) of:
the L-layer baseline (all trained), and every MSLT stage configuration of an
L/4 → L/2 → 3L/4 → L schedule (depth d with the top L/4 layers trainable,
embeddings and tied decoder frozen, the bottom forward-only under no_grad),
plus any `--extra DEPTH:K[:emb]` configuration. Configurations alternate in
rounds (A/B/C…/C/B/A…) so machine drift hits all alike; each row reports
the median step time.

Next to each measured speedup over the baseline step it prints the cost
model's prediction (`growcockpit.plan.estimate_cost`) with r
and h measured on the spot, both the textbook formula and the `refined` one
(tied decoder without weight gradient, lowest trainable block without input
gradient, frozen blocks' eval-mode forward measured: growcockpit/plan/cost.py).

    python bench/stage_cost.py                       # BERT 12 × 256, seq 128, batch 16 (CPU)
    python bench/stage_cost.py --family gpt2
    python bench/stage_cost.py --scale base          # BERT-Base shape, batch 128 (a GPU)
    python bench/stage_cost.py --quick               # tiny: the smoke test (< 30 s)
    python bench/stage_cost.py --extra 12:1 --extra 12:3:emb --extra 12:6

Last line: `stage_cost: stage4_step_speedup=1.74x (model 1.80x, textbook 1.52x) ...`.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
for _path in (BENCH, BENCH / "gpu"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import gpu_check  # noqa: E402  (sets HF_HUB_OFFLINE, the repo path)
import torch  # noqa: E402
from common import Size, plan_for  # noqa: E402

from growcockpit.backend.calibrate import Clock, autocast_for, measure_r_h  # noqa: E402
from growcockpit.backend.data.blocks import Batch, load_blocks  # noqa: E402
from growcockpit.backend.loop.step import resolve_precision  # noqa: E402
from growcockpit.plan import Stage, estimate_cost  # noqa: E402
from growcockpit.plan.cost import default_head_cost  # noqa: E402
from growcockpit.plan.types import Plan  # noqa: E402

SIZES = {
    "quick": Size("bert", 4, 64, 4, 64, 8, 2000, 1, 3e-4, 0),
    "cpu": Size("bert", 12, 256, 4, 128, 16, 8000, 1, 3e-4, 0),
    "base": Size("bert", 12, 768, 12, 128, 128, 30522, 1, 1e-4, 0),
}


def fast(times: list[float]) -> float:
    """Mean of the fastest quarter: what a step costs when no other tenant interferes."""
    best = sorted(times)[: max(1, len(times) // 4)]
    return statistics.fmean(best)


def parse_extra(text: str, layers: int) -> tuple[int, int, bool]:
    parts = text.split(":")
    try:
        depth, k = int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        raise SystemExit(f"stage_cost: --extra {text!r}: want DEPTH:K or DEPTH:K:emb") from None
    if not (1 <= depth <= layers and 0 <= k <= depth):
        raise SystemExit(f"stage_cost: --extra {text!r}: need 1 <= DEPTH <= {layers}, K <= DEPTH")
    return depth, k, len(parts) > 2 and parts[2] == "emb"


def mslt_timing_plan(size: Size, k: int, extras: list[tuple[int, int, bool]]) -> Plan:
    """k, 2k, … L layers (top k new each grow), then the extra configs at full depth."""
    L = size.layers
    depths = list(range(k, L + 1, k))
    if depths[-1] != L:
        depths.append(L)
    stages = [Stage(f"shallow-{depths[0]}", depths[0], 1, enter="init", train="all")]
    for d in depths[1:]:
        stages.append(Stage(f"grow-{d}", d, 1, enter="stack", source="top", train="new"))
    for depth, kk, emb in extras:  # extras are timed at depth L; shallower ones grow first
        if depth != L:
            raise SystemExit("stage_cost: --extra configs are timed at the final depth only")
        train = "none" if kk == 0 else ("all" if kk == depth else f"top:{kk}")
        stages.append(
            Stage(
                f"top{kk}{'+emb' if emb else ''}",
                depth,
                1,
                train=train,
                embeddings="train" if emb else "frozen",
            )
        )
    return plan_for(size, "stage-cost-mslt", stages)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", choices=sorted(SIZES), default="cpu")
    ap.add_argument("--quick", action="store_true", help="= --scale quick, few steps")
    ap.add_argument("--family", choices=("bert", "gpt2", "llama"), default="bert")
    ap.add_argument("--kv-heads", type=int, help="key/value heads (llama; default: half the heads)")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--seq-len", type=int)
    ap.add_argument("--batch-size", type=int)
    ap.add_argument("--vocab", type=int, help="tokenizer train:N (default 8000 CPU, 30522 base)")
    ap.add_argument("--k", type=int, help="layers added (and trained) per grow (default L/4)")
    ap.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar="DEPTH:K[:emb]",
        help="also time depth DEPTH (= L) with the top K trainable; ':emb' keeps the embeddings trainable",
    )
    ap.add_argument("--steps", type=int, help="timed steps per config (default 24; quick 4)")
    ap.add_argument(
        "--rounds", type=int, help="interleaved rounds (default: steps / 2, at most 12; quick 2)"
    )
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps per config first")
    ap.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    ap.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda if available)")
    ap.add_argument("--dtype", choices=("bf16", "fp16", "fp32"))
    ap.add_argument("--budget-s", type=float, help="stop timing rounds after this many seconds")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    t_start = time.monotonic()
    if args.quick:
        args.scale = "quick"
    base = SIZES[args.scale]
    size = Size(
        args.family,
        args.layers or base.layers,
        args.hidden or base.hidden,
        args.heads or base.heads,
        args.seq_len or base.seq,
        args.batch_size or base.batch,
        args.vocab or base.vocab,
        1,
        base.lr,
        0,
        kv_heads=(args.kv_heads or max(1, (args.heads or base.heads) // 2))
        if args.family == "llama"
        else None,
    )
    steps = args.steps or (4 if args.scale == "quick" else 24)
    rounds = max(
        1, min(args.rounds or (2 if args.scale == "quick" else min(12, steps // 2)), steps)
    )
    if args.threads:
        torch.set_num_threads(args.threads)
    device = gpu_check.pick_device(args.device)
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")
    import transformers

    transformers.utils.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    k = args.k or max(1, size.layers // 4)
    extras = [parse_extra(e, size.layers) for e in args.extra]
    mslt = mslt_timing_plan(size, k, extras)
    base_plan = plan_for(
        size, "stage-cost-baseline", [Stage("full", size.layers, 1, enter="init", train="all")]
    )
    dtype = args.dtype or resolve_precision(mslt.optim.precision, device)
    note = gpu_check.fallback_texts_if_no_datasets()
    if note:
        print(f"stage_cost: {note}")
    data = load_blocks(mslt.data, size.family, mslt.seed)
    print(
        f"stage_cost: {size.family} {size.layers} layers × {size.hidden} ({size.heads} heads, FFN {size.ffn}), "
        f"seq {size.seq}, batch {size.batch}, vocab {data.vocab_size}; {gpu_check.device_name(device)}, {dtype}"
    )
    host = [data.train_batch(i, size.batch) for i in range(max(2, min(8, steps)))]
    batches = [Batch(b.input_ids.to(device), b.labels.to(device)) for b in host]
    configs = gpu_check.build_configs("baseline", base_plan, data, device)
    configs += gpu_check.build_configs("mslt", mslt, data, device)
    clock = Clock(device)
    amp = lambda: autocast_for(device, dtype)  # noqa: E731
    quick = args.scale == "quick"
    rh = measure_r_h(
        configs[0].model,
        size.family,
        batches[0],
        amp,
        clock,
        reps=3 if quick else 7,
        inner=1 if quick else 3,
    )
    r, h = rh["r"], rh["h"]
    print(
        f"stage_cost: block fwd {rh['block_fwd_ms']:.1f} ms, fwd+bwd {rh['block_fwd_bwd_ms']:.1f} ms → r = {r:.2f}; "
        f"head fwd {rh['head_fwd_ms']:.1f} ms → h = {h:.2f} (analytic {default_head_cost(mslt):.2f}); "
        f"frozen fwd {rh['frozen_over_grad_fwd']:.2f}× a training fwd"
    )
    fns = {id(c): gpu_check.make_step(c, batches, amp, mslt.optim.grad_clip) for c in configs}
    for c in configs:
        clock.run(fns[id(c)], args.warmup)
    per_round = [steps // rounds + (1 if i < steps % rounds else 0) for i in range(rounds)]
    deadline = t_start + args.budget_s if args.budget_s else math.inf
    done = 0
    for rnd, n in enumerate(per_round):
        if rnd > 0 and time.monotonic() > deadline:
            print(f"stage_cost: budget reached after {rnd} of {rounds} rounds")
            break
        for c in configs if rnd % 2 == 0 else configs[::-1]:
            c.times_ms.extend(clock.run(fns[id(c)], n))
        done += 1
    for c in configs:  # where the time goes: one synchronized pass, not used for speedups
        c.parts = gpu_check.breakdown(
            c, batches, amp, mslt.optim.grad_clip, clock, 2 if quick else 3
        )

    phi = rh["frozen_over_grad_fwd"]
    refined = estimate_cost(mslt, r=r, h=h, refined=True, frozen_fwd=phi)
    textbook = estimate_cost(mslt, r=r, h=h)
    base_ms = statistics.median(configs[0].times_ms)
    base_fast = fast(configs[0].times_ms)
    rows: list[dict[str, Any]] = []
    for c in configs:
        ms = statistics.median(c.times_ms)
        is_mslt = c.plan == "mslt"
        model = 1 / refined.stages[c.stage_index].rel_step_cost if is_mslt else 1.0
        old = 1 / textbook.stages[c.stage_index].rel_step_cost if is_mslt else 1.0
        spread = statistics.quantiles(c.times_ms, n=10) if len(c.times_ms) >= 2 else [ms] * 9
        rows.append(
            {
                "config": c.label,
                "depth": c.depth,
                "trainable": len(c.trainable),
                "embeddings_trainable": c.embeddings_trainable,
                "step_ms": ms,
                "p10_ms": spread[0],
                "p90_ms": spread[-1],
                "steps": len(c.times_ms),
                "measured_speedup": base_ms / ms,
                "fast_speedup": base_fast / fast(c.times_ms),
                "model_speedup": model,
                "textbook_speedup": old,
                "error": (base_ms / ms) / model - 1,
                "fast_error": (base_fast / fast(c.times_ms)) / model - 1,
                **c.parts,
            }
        )
    print()
    print(
        f"Step cost vs the {size.layers}-layer baseline step ({base_ms:.0f} ms); medians of "
        f"{len(configs[0].times_ms)} steps/config over {done} interleaved rounds."
    )
    print(
        f"model = refined §6 cost model (frozen fwd {phi:.2f}×), textbook = §6 as written; "
        f"both with r = {r:.2f}, h = {h:.2f} measured here"
    )
    head = (
        f"{'config':<22}{'depth':>6}{'train':>6}{'step ms':>9}{'p10-p90':>13}{'fwd':>7}{'bwd':>7}{'opt':>6}"
        f"{'speedup':>9}{'model':>7}{'err':>6}{'textbook':>9}{'fast':>7}{'err':>6}"
    )
    print(head)
    print("-" * len(head))
    for row in rows:
        train = "all" if row["trainable"] == row["depth"] else str(row["trainable"])
        train += "+e" if row["embeddings_trainable"] and train != "all" else ""
        print(
            f"{row['config']:<22}{row['depth']:>6}{train:>6}{row['step_ms']:>9.0f}"
            f"{row['p10_ms']:>6.0f}-{row['p90_ms']:<6.0f}{row.get('fwd_ms', 0):>7.0f}{row.get('bwd_ms', 0):>7.0f}"
            f"{row.get('opt_ms', 0):>6.0f}{row['measured_speedup']:>8.2f}x{row['model_speedup']:>6.2f}x"
            f"{100 * row['error']:>+5.0f}%{row['textbook_speedup']:>8.2f}x"
            f"{row['fast_speedup']:>6.2f}x{100 * row['fast_error']:>+5.0f}%"
        )
    print(
        "speedup = baseline median / config median; fast = the same with each config's fastest "
        "quarter of steps (robust when the machine is shared); err = measured / model − 1"
    )
    grow_rows = [
        row
        for row in rows
        if row["config"].startswith("mslt") and "grow" in row["config"] and row["trainable"] > 0
    ]
    key = grow_rows[-1] if grow_rows else rows[-1]
    mslt_rows = [row for row in rows if row["config"].startswith("mslt")]
    worst = max(mslt_rows, key=lambda row: abs(row["error"]))
    within = all(abs(row["error"]) <= 0.10 for row in mslt_rows)
    worst_fast = max(abs(row["fast_error"]) for row in mslt_rows)
    summary = (
        f"stage_cost: stage{len(grow_rows) + 1}_step_speedup={key['measured_speedup']:.2f}x "
        f"(model {key['model_speedup']:.2f}x, textbook {key['textbook_speedup']:.2f}x) "
        f"worst_error={100 * worst['error']:+.0f}% ({worst['config']}) within_10pct={'yes' if within else 'no'} "
        f"worst_fast_error={100 * worst_fast:.0f}% "
        f"r={r:.2f} h={h:.2f} baseline_step={base_ms:.0f}ms elapsed={time.monotonic() - t_start:.0f}s"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "size": size.__dict__,
                    "k": k,
                    "device": gpu_check.device_name(device),
                    "dtype": dtype,
                    "threads": torch.get_num_threads(),
                    "r_h": rh,
                    "rows": rows,
                    "summary": summary,
                },
                indent=2,
            )
        )
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
