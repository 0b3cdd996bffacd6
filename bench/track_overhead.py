"""Cost of `growcockpit.track` on a user's own loop: tracked at the default cadence vs untracked.

Two copies of the same GPT-2 (same weights, optimizer and batches) take turns step by step
(A/B/A/B…), so machine drift and other processes hit both alike; one is a plain loop, the
other the same loop with `cockpit.step(loss=loss, tokens=n)` after each optimizer step
(events, per-layer stats every 5 steps, block timings every 10, system samples every 2 s,
the control socket polled: the defaults). A round is `--block` steps of each (a multiple of
the cadences, so each tracked round holds its fair share of sampled steps); the overhead is
the median over rounds of tracked/untracked time (robust to a load spike in one round),
beside the ratio of the totals and the time spent inside `cockpit.step()` itself (the loss
read, the events, the spike guard, the commands polled) as a share of a step, which load
noise cannot hide. The LR hook and the per-layer hooks run inside `optimizer.step()`, so
only the A/B ratio sees them. Prints one line:

    track overhead: tracked=0.412s/step untracked=0.405s/step overhead=+1.7% (target <= 2%) ...

Usage: python bench/track_overhead.py [--rounds 12] [--block 10] [--layers 4] [--hidden 256]
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


def _round(
    plain: tuple[torch.nn.Module, torch.optim.Optimizer],
    tracked: tuple[torch.nn.Module, torch.optim.Optimizer],
    batches: list[torch.Tensor],
    cockpit: Tracker | None,
) -> tuple[float, float, float]:
    """Seconds per step of each arm over one round, the arms taking turns step by step, and
    of the tracked arm's time spent inside `cockpit.step()` (the loss read, the events, the
    guard, the commands polled: the part of the overhead load noise cannot hide).

    Both read the loss every step (as a loop that logs it does)."""
    spent = [0.0, 0.0, 0.0]
    for ids in batches:
        for arm, (model, opt) in enumerate((plain, tracked)):
            start = time.perf_counter()
            loss = _step(model, opt, ids)
            if arm == 1 and cockpit is not None:
                inside = time.perf_counter()
                cockpit.step(loss=loss, tokens=ids.numel())
                spent[2] += time.perf_counter() - inside
            else:
                float(loss.detach())
            spent[arm] += time.perf_counter() - start
    return spent[0] / len(batches), spent[1] / len(batches), spent[2] / len(batches)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=12)
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
    pair = ((plain, plain_opt), (tracked, tracked_opt))
    _round(*pair, batches[:2], None)  # warm-up: first-call allocations, both alike
    with tempfile.TemporaryDirectory() as tmp:
        cockpit = growcockpit.track(
            Path(tmp) / "run",
            model=tracked,
            optimizer=tracked_opt,
            config={k: v for k, v in vars(args).items() if k != "json"},
        )
        rounds: list[tuple[float, float, float]] = []
        with cockpit:
            for _ in range(args.rounds):
                rounds.append(_round(*pair, batches, cockpit))
        log = Path(tmp) / "run" / "events.jsonl"
        stats = sum(1 for line in log.open() if '"layer_stats"' in line)
    off = [r[0] for r in rounds]
    on = [r[1] for r in rounds]
    overhead = statistics.median(r[1] / r[0] for r in rounds) - 1
    in_step = sum(r[2] for r in rounds) / sum(off)  # of the untracked step time
    total = sum(on) / sum(off) - 1
    t_on, t_off = statistics.mean(on), statistics.mean(off)
    print(
        f"track overhead: tracked={t_on:.3f}s/step untracked={t_off:.3f}s/step "
        f"overhead={overhead * 100:+.1f}% (target <= 2%; median of {args.rounds} rounds, "
        f"totals {total * 100:+.1f}%); inside step(): {in_step * 100:.2f}% of a step; "
        f"{stats} layer_stats events in "
        f"{args.rounds * args.block} tracked steps"
    )
    if args.json:
        result = {
            "command": "python " + " ".join([sys.argv[0], *(argv or sys.argv[1:])]),
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "tracked_s_per_step": t_on,
            "untracked_s_per_step": t_off,
            "overhead": overhead,
            "overhead_of_totals": total,
            "inside_step_share": in_step,
            "inside_step_rounds": [r[2] for r in rounds],
            "tracked_rounds": on,
            "untracked_rounds": off,
            "layer_stats_events": stats,
            "threads": torch.get_num_threads(),
            "cpus": os.cpu_count(),
            "load_avg": list(os.getloadavg()),
        }
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
