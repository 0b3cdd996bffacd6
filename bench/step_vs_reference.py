"""The product's training step against a compact reference loop of the same math, per stage.

For each family's grown plan (GPT-2: sample_plans/gpt2-mslt.toml, BERT:
mslt-bert-base.toml, Llama: llama-smollm-135m.toml) it times, interleaved in
the same rounds (A/B/…/B/A, so drift hits all alike):

* the product's step, through the engine itself (`Trainer.train_step`, the
  trainer entered into the stage by `enter_stage`: bench/reference/pairs.py),
  at full depth (the plan's own baseline: its final depth, all trained) and at
  every stage, with the plan's per-layer metrics cadence;
* the full-depth step again with the per-layer metrics off, and at the cadence a plan
  that sets none gets (every 5 steps, timing every 10): their cost at both cadences;
* the reference loop (bench/reference/: fused QKV into SDPA, no hooks,
  `F.cross_entropy` on the logits, the same AdamW, clip and autocast) loaded
  with each configuration's weights, trainable set and frozen bottom;
* with `--bare`, the product's model math alone (its loss module, backward, clip and
  optimizer on the reference's batches, none of the engine's step around it), which splits
  each gap into the model's math and the step's own work;
* with `--compile`, all of them again compiled (the product as
  `[optim] compile = true` compiles it, the reference's whole loss with
  `torch.compile`), as twins in the same rounds.

It prints per configuration the step ms, tokens/s, `vs_reference` (the
product's tokens/s over its reference's) and the operators per step of both
(bench/reference/op_count.py: dispatched operators eager; the profiler's count
compiled), the operators the product adds most, and the per-layer metrics' cost; each ratio
also from each side's fastest chunk (load only adds time).

    python bench/step_vs_reference.py                      # the three families, CPU shapes
    python bench/step_vs_reference.py --plans bert --compile
    python bench/step_vs_reference.py --scale tiny --quick # the CPU smoke test (seconds)
    python bench/step_vs_reference.py --scale full         # GPT-2-small, BERT-Base, SmolLM (a GPU)

Last line: `step_vs_reference: gpt2 vs_reference=0.97 ... bert ... llama ... device=...`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for _path in (REPO, REPO / "bench", REPO / "bench" / "gpu"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from gpu_configs import full_depth_baseline  # noqa: E402
from gpu_datasheet import datasheet_for  # noqa: E402
from gpu_roofline import measure_peak  # noqa: E402
from reference.op_count import dispatched_ops, profiled_ops  # noqa: E402
from reference.pairs import (  # noqa: E402
    Timed,
    bare_step,
    reference_twin,
    timed_plan,
    tokens_per_step,
    trainer_at,
)
from reference.report import Peaks, report, summary  # noqa: E402
from reference.rows import Row  # noqa: E402
from reference.scales import SCALES, plan_at  # noqa: E402

from growcockpit.backend.data.blocks import load_blocks  # noqa: E402
from growcockpit.backend.device import prepare_device  # noqa: E402
from growcockpit.backend.loop.engine import Trainer  # noqa: E402
from growcockpit.plan import load_plan  # noqa: E402
from growcockpit.plan.flops import stage_step_flops  # noqa: E402
from growcockpit.plan.types import MetricsSpec, Plan  # noqa: E402

PLANS = {
    "gpt2": REPO / "sample_plans" / "gpt2-mslt.toml",
    "bert": REPO / "sample_plans" / "mslt-bert-base.toml",
    "llama": REPO / "sample_plans" / "llama-smollm-135m.toml",
}


def product_step(t: Trainer) -> Any:
    def step() -> None:
        t.train_step()

    return step


@dataclass
class MetricsTwins:
    """The full-depth product with the per-layer metrics off, and at the default cadence."""

    off: Timed
    default: Timed


def build_rows(
    plan: Plan,
    device: torch.device,
    root: Path,
    compile_: str,
    backend: str,
    batches: int,
    stages: bool = True,
    bare: bool = False,
) -> tuple[list[Row], MetricsTwins]:
    """The full-depth row, one row per stage, and the full-depth product's metrics twins."""
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    base = full_depth_baseline(plan)
    tokens = tokens_per_step(plan)
    setups: list[tuple[str, Plan, int]] = [(f"full-{plan.model.final_layers}", base, 0)]
    if stages:
        setups += [(f"{i + 1} {s.name}", plan, i) for i, s in enumerate(plan.stages)]
    rows: list[Row] = []
    for n, (label, p, stage) in enumerate(setups):
        t = trainer_at(timed_plan(p, False), stage, data, device, root / f"{n}")
        _, ref_step = reference_twin(t, batches, False)
        row = Row(
            label,
            Timed(label, "product", False, product_step(t), tokens),
            Timed(label, "reference", False, ref_step, tokens),
            flops=stage_step_flops(p)[stage],
        )
        if bare:
            row.bare = Timed(label, "product-bare", False, bare_step(t, batches), tokens)
        if compile_ == "all" or (compile_ == "full" and n == 0):
            tc = trainer_at(
                timed_plan(p, True, "plan", backend), stage, data, device, root / f"{n}c"
            )
            _, ref_c = reference_twin(tc, batches, True)
            row.compiled = (
                Timed(label, "product", True, product_step(tc), tokens),
                Timed(label, "reference", True, ref_c, tokens),
            )
        rows.append(row)
    twins = []
    for kind, metrics in (("product-nometrics", "off"), ("product-default-metrics", "default")):
        t = trainer_at(timed_plan(base, False, metrics), 0, data, device, root / metrics)  # type: ignore[arg-type]
        twins.append(Timed(setups[0][0], kind, False, product_step(t), tokens))  # type: ignore[arg-type]
    return rows, MetricsTwins(*twins)


def every_timed(rows: list[Row], twins: MetricsTwins) -> list[Timed]:
    """The round order: each product next to its twins (ratios are taken within a round),
    the full-depth step without metrics and at the default cadence right after the one
    at the plan's cadence."""
    out: list[Timed] = []
    for r in rows:
        out += [r.product, *([r.bare] if r.bare else []), r.reference, *(r.compiled or ())]
    return [out[0], twins.off, twins.default, *out[1:]]


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def chunk_ms(t: Timed, device: torch.device, steps: int) -> float:
    """Wall ms of `steps` back-to-back steps, synchronized at both ends."""
    sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        t.step()
    sync(device)
    return (time.perf_counter() - start) * 1e3


def warm(timed: list[Timed], device: torch.device, steps: int) -> None:
    for t in timed:
        t.warm_s = chunk_ms(t, device, steps) / 1e3


def metrics_cycle(plan: Plan, most: int = 100) -> int:
    """Steps in which every metrics cadence (layer stats, layer timing, the step read), the
    plan's and the default one, fires a whole number of times: each timed chunk and each
    operator count spans one, so that a chunk's mean carries the metrics' cost in
    proportion (a shorter chunk would skip them, a ragged one overweight them)."""
    m, d = plan.metrics, MetricsSpec
    every = [m.every_steps, m.timing_every_steps, m.log_every_steps, d.every_steps]
    every.append(d.timing_every_steps)
    return max(1, min(most, math.lcm(*[max(1, e) for e in every])))


def count_ops(rows: list[Row], device: torch.device, cycle: int) -> None:
    """Eager: dispatched operators over one metrics cycle of the product, two reference
    steps. Compiled: the profiler's count over as many."""
    cuda = device.type == "cuda"
    for r in rows:
        r.product.ops, r.product_ops = dispatched_ops(r.product.step, cycle)
        r.reference.ops, r.reference_ops = dispatched_ops(r.reference.step, 2)
        r.count_steps = (cycle, 2)
        if cuda:
            r.product.launches = profiled_ops(r.product.step, cycle, cuda)
            r.reference.launches = profiled_ops(r.reference.step, 2, cuda)
        if r.compiled is not None:
            for t, n in zip(r.compiled, (cycle, 2), strict=True):
                t.ops = profiled_ops(t.step, n, cuda)
                t.launches = t.ops if cuda else None


def rounds(timed: list[Timed], device: torch.device, n_rounds: int, per_round: int) -> None:
    """Interleaved rounds: every configuration runs `per_round` steps as one chunk per round,
    in an order reversed every other round; each chunk's mean step is one sample."""
    for rnd in range(n_rounds):
        order = timed if rnd % 2 == 0 else list(reversed(timed))
        for t in order:
            t.chunk_ms.append(chunk_ms(t, device, per_round) / per_round)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plans", default="gpt2,bert,llama", help="families, comma-separated")
    ap.add_argument(
        "--scale", choices=tuple(SCALES), default=None, help="default: full on CUDA, cpu otherwise"
    )
    ap.add_argument("--device", default=None)
    ap.add_argument(
        "--compile",
        nargs="?",
        const="all",
        default="none",
        choices=("none", "full", "all"),
        help="compiled twins too: of every configuration (all, the default with the flag) "
        "or of the full-depth one only (full: a short GPU run)",
    )
    ap.add_argument("--compile-backend", default="inductor")
    ap.add_argument(
        "--rows",
        choices=("all", "full"),
        default="all",
        help="every stage and the full depth (all), or the full-depth step only (full)",
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--steps",
        type=int,
        default=None,
        help="steps per configuration per round (default: one metrics cycle of the plan)",
    )
    ap.add_argument(
        "--bare",
        action="store_true",
        help="also time the product's model math alone (where each gap lives: the model "
        "or the step around it)",
    )
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="2 rounds of 2 steps (the smoke test)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    import transformers

    transformers.utils.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    device = prepare_device(
        torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    )
    scale = args.scale or ("full" if device.type == "cuda" else "cpu")
    started = time.perf_counter()
    name = (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else f"cpu({torch.get_num_threads()} threads)"
    )
    peaks = Peaks(measure_peak(device), datasheet_for(name) if device.type == "cuda" else None)
    results: dict[str, dict[str, Any]] = {}
    for family in [f.strip() for f in args.plans.split(",") if f.strip()]:
        if family not in PLANS:
            raise SystemExit(f"step_vs_reference: --plans {family!r}: known are {', '.join(PLANS)}")
        plan = plan_at(load_plan(PLANS[family]), scale)
        with tempfile.TemporaryDirectory(prefix="step-vs-ref-") as tmp:
            rows, twins = build_rows(
                plan,
                device,
                Path(tmp),
                args.compile,
                args.compile_backend,
                batches=4,
                stages=args.rows == "all",
                bare=args.bare,
            )
            timed = every_timed(rows, twins)
            cycle = metrics_cycle(plan)  # the operator counts span one even with --quick
            warm(timed, device, 1 if args.quick else args.warmup)
            count_ops(rows, device, cycle)
            for twin in (twins.off, twins.default):
                twin.ops, _ = dispatched_ops(twin.step, cycle)
            n_rounds = 2 if args.quick else args.rounds
            per_round = 2 if args.quick else args.steps or cycle
            rounds(timed, device, n_rounds, per_round)
            results[family] = report(family, rows, twins.off, twins.default, peaks)
            results[family]["plan"] = {
                "path": str(PLANS[family]),
                "scale": scale,
                "shape": plan.model.__dict__,
                "steps_per_chunk": per_round,
                "rounds": n_rounds,
            }
        if device.type == "cuda":
            torch.cuda.empty_cache()
        # after every family: a run cut short by its time limit keeps the families it finished
        line = summary(results, name, time.perf_counter() - started)
        if args.json:
            document = {"summary": line, "device": name, "peaks": peaks, "families": results}
            args.json.write_text(json.dumps(document, indent=1, default=str))
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
