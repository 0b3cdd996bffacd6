"""Cost of growcockpit's metrics: step time with everything on at the default cadence vs all off.

Two trainers on the same model, data and stage configuration alternate in
blocks of `--block` steps (A/B/A/B…), so machine drift hits both alike. Each
block is a multiple of the metric cadences, so "on" blocks contain their fair
share of sampled steps. Prints one summary line:

    overhead: metrics_on=0.412s/step metrics_off=0.405s/step overhead=+1.7% (target <= 2%)

Usage: python bench/overhead.py [--blocks 6] [--block 10] [--layers 4] [--hidden 256] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.data.blocks import load_blocks
from growcockpit.backend.device import prepare_device
from growcockpit.backend.loop.engine import Trainer
from growcockpit.metrics import SystemSampler
from growcockpit.plan import MetricsSpec, loads_plan
from growcockpit.protocol import EventLog, RunPaths

PLAN = """
name = "overhead"
[model]
family = "{family}"
hidden_size = {hidden}
num_heads = {heads}
intermediate_size = {ffn}
max_seq_len = {seq}
final_layers = {layers}
[data]
tokenizer = "train:8000"
seq_len = {seq}
[optim]
batch_size = {batch}
warmup_steps = 1
[metrics]
every_steps = {every}
timing_every_steps = {timing}
system_every_s = {system}
eval_every_steps = 0
[[stages]]
name = "grow"
layers = {layers}
enter = "init"
train = "top:{top}"
steps = 1000000
"""


def make_trainer(
    root: Path, args: argparse.Namespace, metrics_on: bool
) -> tuple[Trainer, SystemSampler | None]:
    defaults = MetricsSpec()
    text = PLAN.format(
        family=args.family,
        hidden=args.hidden,
        heads=max(1, args.hidden // 64),
        ffn=4 * args.hidden,
        seq=args.seq_len,
        layers=args.layers,
        top=max(1, args.layers // 2),
        batch=args.batch_size,
        every=defaults.every_steps if metrics_on else 0,
        timing=defaults.timing_every_steps if metrics_on else 0,
        system=defaults.system_every_s if metrics_on else 0.0,
    )
    plan = loads_plan(text, "overhead.toml")
    root.mkdir(parents=True, exist_ok=True)
    paths = RunPaths(root)
    reporter = RunReporter(EventLog(paths.events).append)
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    torch.manual_seed(0)
    device = prepare_device(
        torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    )
    trainer = Trainer(plan, root, data, reporter, device)
    trainer.enter_stage()
    sampler = None
    if metrics_on:
        sampler = SystemSampler(reporter.emit, plan.metrics.system_every_s)
        sampler.start()
    return trainer, sampler


def timed_block(trainer: Trainer, steps: int) -> float:
    if trainer.device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        trainer.train_step()
    if trainer.device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", type=int, default=6, help="A/B pairs")
    ap.add_argument(
        "--block", type=int, default=10, help="steps per block (a multiple of the cadences)"
    )
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--family", default="bert", choices=["bert", "gpt2"])
    ap.add_argument("--device")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        on, sampler = make_trainer(Path(tmp) / "on", args, metrics_on=True)
        off, _ = make_trainer(Path(tmp) / "off", args, metrics_on=False)
        timed_block(on, 2)
        timed_block(off, 2)
        t_on, t_off = [], []
        for _ in range(args.blocks):
            t_on.append(timed_block(on, args.block))
            t_off.append(timed_block(off, args.block))
        if sampler is not None:
            sampler.stop()
    a, b = statistics.median(t_on), statistics.median(t_off)
    overhead = a / b - 1
    result = {
        "metrics_on_s_per_step": a,
        "metrics_off_s_per_step": b,
        "overhead": overhead,
        "blocks": args.blocks,
        "block_steps": args.block,
        "config": {k: v for k, v in vars(args).items() if k != "json"},
        "device": str(on.device),
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))
    print(
        f"overhead: metrics_on={a:.4f}s/step metrics_off={b:.4f}s/step "
        f"overhead={overhead * 100:+.1f}% (target <= 2%) device={on.device}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
