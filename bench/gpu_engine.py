"""The real stage engine on the GPU: a short run of the MSLT plan through `Trainer`, per stage.

bench/gpu_check.py times each stage's step in isolation; this runs the
engine itself (prefetch, the step of backend/step.py, stage changes, events)
on the same plan with every stage cut to `--steps` steps and step events every
10 steps, and prints per stage: tokens/s, the fwd/bwd/opt split the engine
reports (CUDA events), host syncs per step (CUDA's sync debug mode, counted
over the stage), peak memory, memory freed at the stage change and, with
`--compile`, the compile time. `--write-plan` also writes the shortened plan
(bench/gpu_check.sh trains it under torchrun with two GPUs).

    python bench/gpu_engine.py                       # BERT-Base MSLT plan, CUDA
    python bench/gpu_engine.py --tiny --device cpu   # the CPU smoke test (seconds)

Last line: `gpu_engine: stages=N tokens_per_s=[…] syncs_per_step=[…] device=…`.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from growcockpit.backend.data import load_blocks  # noqa: E402
from growcockpit.backend.device import prepare_device  # noqa: E402
from growcockpit.backend.engine import Trainer  # noqa: E402
from growcockpit.backend.reporter import RunReporter  # noqa: E402
from growcockpit.plan import dump_plan, load_plan  # noqa: E402
from growcockpit.plan.types import Plan  # noqa: E402
from growcockpit.protocol import EventLog, RunPaths  # noqa: E402
from growcockpit.protocol.events import Event, StageStarted, Step  # noqa: E402

MSLT_PLAN = REPO / "sample_plans" / "mslt-bert-base.toml"
SYNC_WARNING = "called a synchronizing CUDA operation"


def short_plan(plan: Plan, steps: int, log_every: int, compile_: bool) -> Plan:
    """Every stage `steps` long; reports every `log_every` steps; no eval, checkpoint or samplers."""
    p = copy.deepcopy(plan)
    p.name = plan.name + "-gpu-engine"
    for stage in p.stages:
        stage.steps = steps
        stage.warmup_steps = None
    p.optim.warmup_steps = min(p.optim.warmup_steps, max(1, steps // 4))
    p.optim.compile = compile_
    p.metrics.log_every_steps = log_every
    p.metrics.every_steps = p.metrics.timing_every_steps = p.metrics.eval_every_steps = 0
    p.metrics.system_every_s = 0.0
    p.checkpoint.every_steps = 0
    return p


class StageMeter(RunReporter):
    """Records the engine's events and, per stage, syncs and peak memory."""

    def __init__(self, root: Path, device: torch.device) -> None:
        paths = RunPaths(root)
        super().__init__(EventLog(paths.events).append)
        self.device = device
        self.rows: list[dict[str, Any]] = []
        self.syncs = 0

    def emit(self, event: Event) -> Event:
        if isinstance(event, StageStarted):
            self._close_stage()
            if self.device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(self.device)
            self.rows.append(
                {
                    "name": event.name,
                    "layers": event.layers,
                    "trainable": event.trainable_layers,
                    "compile_s": event.compile_s,
                    "freed_bytes": event.freed_bytes,
                    "steps": [],
                    "syncs_at_start": self.syncs,
                }
            )
        elif isinstance(event, Step) and self.rows:
            self.rows[-1]["steps"].append(event)
        return super().emit(event)

    def _close_stage(self) -> None:
        if not self.rows or "syncs" in self.rows[-1]:
            return
        row = self.rows[-1]
        row["syncs"] = self.syncs - row["syncs_at_start"]
        if self.device.type == "cuda":
            row["peak_bytes"] = torch.cuda.max_memory_allocated(self.device)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", type=Path, default=MSLT_PLAN)
    ap.add_argument("--tiny", action="store_true", help="gpu_check's tiny shapes (CPU test)")
    ap.add_argument("--steps", type=int, default=None, help="steps per stage (default 60; tiny 10)")
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--device", default=None)
    ap.add_argument("--compile", action="store_true", help="[optim] compile = true")
    ap.add_argument("--write-plan", type=Path, default=None, help="also write the short plan here")
    args = ap.parse_args(argv)
    import transformers

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()

    device = prepare_device(
        torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    )
    plan = load_plan(args.plan)
    if args.tiny:
        sys.path.insert(0, str(REPO / "bench"))
        from gpu_check import tiny_plan

        plan = tiny_plan(plan)
        if device.type == "cpu":
            torch.set_num_threads(1)
    steps = args.steps or (10 if args.tiny else 60)
    plan = short_plan(plan, steps, args.log_every, args.compile)
    if args.write_plan:
        args.write_plan.write_text(dump_plan(plan))
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    with tempfile.TemporaryDirectory(prefix="gpu-engine-") as tmp:
        meter = StageMeter(Path(tmp), device)
        torch.manual_seed(plan.seed)
        trainer = Trainer(plan, Path(tmp), data, meter, device)
        started = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if device.type == "cuda":
                torch.cuda.set_sync_debug_mode("warn")
            status = _run_counting(trainer, caught, meter)
            if device.type == "cuda":
                torch.cuda.set_sync_debug_mode("default")
        meter._close_stage()
        wall = time.perf_counter() - started
        if meter.events is not None:
            meter.events.close()
    return report(meter, device, status, wall, steps)


def _run_counting(
    trainer: Trainer, caught: list[warnings.WarningMessage], meter: StageMeter
) -> str:
    """`trainer.run()`, folding the recorded sync warnings into the meter after each step."""
    original = trainer.train_step

    def counted() -> Any:
        out = original()
        meter.syncs += sum(SYNC_WARNING in str(w.message) for w in caught)
        caught.clear()
        return out

    trainer.train_step = counted  # type: ignore[method-assign]
    return trainer.run()


def report(meter: StageMeter, device: torch.device, status: str, wall: float, steps: int) -> int:
    cuda = device.type == "cuda"
    print(f"gpu_engine: {status} in {wall:.1f} s on {device}; {steps} steps per stage")
    head = (
        f"{'stage':<14} {'layers':>6} {'tok/s':>10} {'step ms':>8} {'fwd':>7} {'bwd':>7} {'opt':>7}"
    )
    print(head + f" {'syncs/step':>10} {'peak mem':>9} {'freed':>8} {'compile s':>9}")
    tps: list[float] = []
    sps: list[float] = []
    for row in meter.rows:
        events: list[Step] = row["steps"][1:] or row["steps"]  # the first window holds warm-up
        if not events:
            continue
        tok_s = sum(e.tokens_per_s for e in events) / len(events)
        mean = {
            k: sum(getattr(e, k) for e in events) / len(events)
            for k in ("step_ms", "fwd_ms", "bwd_ms", "opt_ms")
        }
        per_step = row.get("syncs", 0) / steps if cuda else float("nan")
        tps.append(tok_s)
        sps.append(per_step)
        peak = f"{row.get('peak_bytes', 0) / 2**30:.1f} GiB" if cuda else "n/a"
        freed = (
            f"{(row['freed_bytes'] or 0) / 2**20:.0f} MiB"
            if row["freed_bytes"] is not None
            else "n/a"
        )
        comp = f"{row['compile_s']:.1f}" if row["compile_s"] is not None else "-"
        print(
            f"{row['name']:<14} {row['layers']:>6} {tok_s:>10,.0f} {mean['step_ms']:>8.1f} "
            f"{mean['fwd_ms']:>7.1f} {mean['bwd_ms']:>7.1f} {mean['opt_ms']:>7.1f} "
            f"{per_step:>10.2f} {peak:>9} {freed:>8} {comp:>9}"
        )
    if not cuda:
        print("syncs/step: n/a on CPU (counted with CUDA's sync debug mode on a GPU)")
    print(
        f"gpu_engine: stages={len(tps)} tokens_per_s=[{','.join(f'{t:.0f}' for t in tps)}] "
        f"syncs_per_step=[{','.join(f'{s:.2f}' for s in sps)}] device={device.type.upper()}"
    )
    return 0 if status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
