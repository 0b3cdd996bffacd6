"""Cost of `growcockpit.track` on a user's own loop: tracked at the default cadence vs untracked.

Two copies of the same GPT-2 (same weights, optimizer and batches) train in alternating
blocks of `--block` steps (A/B/A/B…), so machine drift hits both alike; one is a plain
loop, the other the same loop with `cockpit.step(loss=loss, tokens=n)` after each
optimizer step (events, per-layer stats every 5 steps, block timings every 10, system
samples every 2 s, the control socket polled: the defaults). Blocks are multiples of the
cadences, so tracked blocks hold their fair share of sampled steps. Prints one line:

    track overhead: tracked=0.412s/step untracked=0.405s/step overhead=+1.7% (target <= 2%)

Usage: python bench/track_overhead.py [--rounds 6] [--block 10] [--layers 4] [--hidden 256]
       [--seq 128] [--batch 8] [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from transformers import GPT2Config, GPT2LMHeadModel

import growcockpit
from growcockpit.tracking import Tracker

VOCAB = 8000


def _step(model: torch.nn.Module, opt: torch.optim.Optimizer, ids: torch.Tensor) -> torch.Tensor:
    loss: torch.Tensor = model(input_ids=ids, labels=ids).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def _block(
    model: torch.nn.Module,
    opt: torch.optim.Optimizer,
    batches: list[torch.Tensor],
    cockpit: Tracker | None,
) -> float:
    """Seconds per step over one block (the loss read every step in both, as a loop logs it)."""
    start = time.perf_counter()
    for ids in batches:
        loss = _step(model, opt, ids)
        if cockpit is not None:
            cockpit.step(loss=loss, tokens=ids.numel())
        else:
            float(loss.detach())
    return (time.perf_counter() - start) / len(batches)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--block", type=int, default=10)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=VOCAB,
        n_positions=args.seq,
        n_embd=args.hidden,
        n_layer=args.layers,
        n_head=max(1, args.hidden // 64),
        bos_token_id=0,
        eos_token_id=0,
    )
    plain = GPT2LMHeadModel(config)
    tracked = copy.deepcopy(plain)
    plain_opt = torch.optim.AdamW(plain.parameters(), lr=3e-4)
    tracked_opt = torch.optim.AdamW(tracked.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(0)
    batches = [
        torch.randint(0, VOCAB, (args.batch, args.seq), generator=g) for _ in range(args.block)
    ]
    _block(plain, plain_opt, batches[:2], None)  # warm-up: first-call allocations, both alike
    with tempfile.TemporaryDirectory() as tmp:
        cockpit = growcockpit.track(
            Path(tmp) / "run",
            model=tracked,
            optimizer=tracked_opt,
            config=vars(args) | {"json": None},
        )
        _block(tracked, tracked_opt, batches[:2], None)
        on: list[float] = []
        off: list[float] = []
        with cockpit:
            for _ in range(args.rounds):
                off.append(_block(plain, plain_opt, batches, None))
                on.append(_block(tracked, tracked_opt, batches, cockpit))
        stats = sum(
            1 for line in (Path(tmp) / "run" / "events.jsonl").open() if '"layer_stats"' in line
        )
    t_on, t_off = statistics.median(on), statistics.median(off)
    overhead = t_on / t_off - 1
    print(
        f"track overhead: tracked={t_on:.3f}s/step untracked={t_off:.3f}s/step "
        f"overhead={overhead * 100:+.1f}% (target <= 2%); {stats} layer_stats events in "
        f"{args.rounds * args.block} tracked steps"
    )
    if args.json:
        result = {
            "command": "python " + " ".join([sys.argv[0], *(argv or sys.argv[1:])]),
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "tracked_s_per_step": t_on,
            "untracked_s_per_step": t_off,
            "overhead": overhead,
            "tracked_blocks": on,
            "untracked_blocks": off,
            "layer_stats_events": stats,
            "threads": torch.get_num_threads(),
            "cpus": os.cpu_count(),
            "load_avg": list(os.getloadavg()),
        }
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
