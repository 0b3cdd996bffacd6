"""The real stage engine on the GPU: a short run of the MSLT plan through `Trainer`, per stage.

bench/gpu/gpu_check.py times each stage's step in isolation; this runs the
engine itself (prefetch, the step of backend/loop/step.py, stage changes, events)
on the same plan with every stage cut to `--steps` steps and step events every
10 steps, and prints per stage: tokens/s, the fwd/bwd/opt split the engine
reports (CUDA events), host overhead (wall-clock tokens/s between step events
next to the engine's in-step tokens/s), the GPU's busy share of the engine's
own steps (`BusyProbe`: a few of them under `torch.profiler`, CUDA only, n/a
on CPU), host syncs per step (CUDA's sync debug mode, counted over the
stage), peak memory, memory freed at the stage change and, with `--compile`,
the compile time. `--batch-sizes 32,128` runs the engine once per batch size
(host overhead matters most at small batches).
`--write-plan` also writes the shortened plan (bench/gpu/gpu_check.sh trains it
under torchrun with two GPUs).

    python bench/gpu/gpu_engine.py --batch-sizes 32,128  # BERT-Base MSLT plan, CUDA
    python bench/gpu/gpu_engine.py --tiny --device cpu   # the CPU smoke test (seconds)

`--passes plain,instrumented` runs each batch size twice: plain (no sync debug mode, no
profiler: the tokens/s and host overhead to quote) then instrumented (sync counts, busy share).
One line per batch size and pass, printed as measured: `gpu_engine: batch=B stages=N
pass=plain tokens_per_s=[…] host_overhead_pct=[…] device=…` and `… pass=instrumented
tokens_per_s=[…] … busy_pct=[…] syncs_per_step=[…] device=…` (busy_pct=n/a on CPU).
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# run from a checkout without `pip install -e .`
for _path in (REPO, REPO / "bench", REPO / "bench" / "gpu"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from gpu_roofline import BUSY_N, BUSY_WARM, BusyProbe  # noqa: E402
from gpu_syncs import (  # noqa: E402
    count_cell,
    fold_syncs,
    steady_and_change,
    sync_sites_lines,
    syncs_cell,
)

from growcockpit.backend.control.reporter import RunReporter  # noqa: E402
from growcockpit.backend.control.sinks import FanOut  # noqa: E402
from growcockpit.backend.data.blocks import TokenBlocks, load_blocks  # noqa: E402
from growcockpit.backend.device import prepare_device  # noqa: E402
from growcockpit.backend.loop.engine import Trainer  # noqa: E402
from growcockpit.plan import dump_plan, load_plan  # noqa: E402
from growcockpit.plan.types import COMPILE_BACKENDS, CompileBackend, Plan  # noqa: E402
from growcockpit.protocol import EventLog, RunPaths  # noqa: E402
from growcockpit.protocol.events import Event, StageStarted, Step  # noqa: E402

MSLT_PLAN = REPO / "sample_plans" / "mslt-bert-base.toml"


def short_plan(
    plan: Plan, steps: int, log_every: int, compile_: bool, backend: CompileBackend = "inductor"
) -> Plan:
    """Every stage `steps` long; reports every `log_every` steps; no eval, checkpoint or samplers;
    with `compile_`, each block's forward compiled with `backend` as the engine does."""
    p = copy.deepcopy(plan)
    p.name = plan.name + "-gpu-engine"
    for stage in p.stages:
        stage.steps = steps
        stage.warmup_steps = None
    p.optim.warmup_steps = min(p.optim.warmup_steps, max(1, steps // 4))
    p.optim.compile = compile_
    if compile_:
        p.optim.compile_backend = backend
    p.metrics.log_every_steps = log_every
    p.metrics.every_steps = p.metrics.timing_every_steps = p.metrics.eval_every_steps = 0
    p.metrics.system_every_s = 0.0
    p.checkpoint.every_steps = 0
    return p


class StageMeter:
    """An event sink beside the log: per stage, the steps, syncs, peak memory and arrival times.

    The engine's reporter fans every event out to the log and to this meter
    (backend/control/sinks.py `FanOut`), so the meter sees exactly what a cockpit
    would, stamped with the host clock when it arrives: the wall-clock tokens/s
    between two step events, set against the engine's own in-step tokens/s,
    is the host overhead the step timer cannot see (events, commands, prefetch).
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.rows: list[dict[str, Any]] = []
        self.syncs = 0

    def __call__(self, event: Event) -> None:
        if isinstance(event, StageStarted):
            self.close_stage()
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
                    "arrived": [],
                    "syncs_at_start": self.syncs,
                }
            )
        elif isinstance(event, Step) and self.rows:
            self.rows[-1]["steps"].append(event)
            self.rows[-1]["arrived"].append(time.perf_counter())

    def count_syncs(self, caught: list[warnings.WarningMessage]) -> None:
        """Fold one step's sync warnings into the total and the current stage's row."""
        self.syncs += fold_syncs(self.rows[-1] if self.rows else None, caught)

    def close_stage(self) -> None:
        if not self.rows or "syncs" in self.rows[-1]:
            return
        row = self.rows[-1]
        row["syncs"] = self.syncs - row["syncs_at_start"]
        if self.device.type == "cuda":
            row["peak_bytes"] = torch.cuda.max_memory_allocated(self.device)


def host_overhead(steps: list[Step], arrived: list[float]) -> tuple[float, float] | None:
    """(wall-clock tokens/s between this stage's step events, the engine's in-step tokens/s).

    Intervals start at the stage's first step event, so the stage change and
    the first window (warm-up, a compile) are left out; None with fewer than
    two events.
    """
    if len(steps) < 2:
        return None
    wall = arrived[-1] - arrived[0]
    tokens = steps[-1].tokens - steps[0].tokens
    inner = [e.tokens_per_s for e in steps[1:]]
    if wall <= 0 or tokens <= 0:
        return None
    return tokens / wall, sum(inner) / len(inner)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", type=Path, default=MSLT_PLAN)
    ap.add_argument("--tiny", action="store_true", help="gpu_check's tiny shapes (CPU test)")
    ap.add_argument("--steps", type=int, default=None, help="steps per stage (default 60; tiny 15)")
    ap.add_argument(
        "--log-every",
        type=int,
        default=None,
        help="step events every N steps (default 10; tiny 5: three events a stage, two intervals)",
    )
    ap.add_argument(
        "--batch-sizes",
        default=None,
        help="comma-separated per-step batch sizes, one engine run each (default: the plan's)",
    )
    ap.add_argument("--device", default=None)
    ap.add_argument("--compile", action="store_true", help="[optim] compile = true")
    ap.add_argument(
        "--compile-backend",
        choices=COMPILE_BACKENDS,
        default="inductor",
        help="[optim] compile_backend with --compile (default inductor)",
    )
    ap.add_argument("--write-plan", type=Path, default=None, help="also write the short plan here")
    ap.add_argument(
        "--passes",
        default="instrumented",
        help="comma list of plain (tokens/s and host overhead with no sync debug mode and no "
        "profiler: the honest speed) and instrumented (sync counts and busy share), in order",
    )
    args = ap.parse_args(argv)
    passes = [p.strip() for p in args.passes.split(",") if p.strip()]
    if not passes or set(passes) - {"plain", "instrumented"}:
        print(
            f"gpu_engine: --passes {args.passes}: a comma list of plain, instrumented",
            file=sys.stderr,
        )
        return 2
    import transformers

    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    transformers.utils.logging.set_verbosity_error()  # type: ignore[no-untyped-call]

    device = prepare_device(
        torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    )
    plan = load_plan(args.plan)
    if args.tiny:
        from gpu_configs import tiny_plan

        plan = tiny_plan(plan)
        if device.type == "cpu":
            torch.set_num_threads(1)
    steps = args.steps or (15 if args.tiny else 60)
    log_every = args.log_every or (5 if args.tiny else 10)
    plan = short_plan(plan, steps, log_every, args.compile, args.compile_backend)
    if args.write_plan:
        args.write_plan.write_text(dump_plan(plan))
    sizes = [int(b) for b in args.batch_sizes.split(",")] if args.batch_sizes else []
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    code = 0
    for batch_size in sizes or [plan.optim.batch_size]:
        for mode in passes:
            run_plan = copy.deepcopy(plan)
            run_plan.optim.batch_size = batch_size
            instrument = mode == "instrumented"
            print(f"== gpu_engine: batch {batch_size}, {mode} pass", flush=True)
            meter, status, wall = run_engine(run_plan, data, device, instrument)
            code = max(code, report(meter, device, status, wall, steps, batch_size, instrument))
            # as measured: a cut keeps the passes before it
            print(summary(meter, device, steps, batch_size, instrument), flush=True)
            if device.type == "cuda":
                torch.cuda.empty_cache()
    return code


def run_engine(
    plan: Plan, data: TokenBlocks, device: torch.device, instrument: bool = True
) -> tuple[StageMeter, str, float]:
    """One `Trainer.run()` of `plan`, its events logged and metered; (meter, status, wall s).
    Without `instrument`: no sync debug mode, no warning capture, no profiler (whose host
    work would inflate the very overhead measured), only the meter's event stamps."""
    with tempfile.TemporaryDirectory(prefix="gpu-engine-") as tmp:
        meter = StageMeter(device)
        log = EventLog(RunPaths(Path(tmp)).events)
        try:
            torch.manual_seed(plan.seed)
            trainer = Trainer(plan, Path(tmp), data, RunReporter(FanOut(log.append, meter)), device)
            started = time.perf_counter()
            if not instrument:
                status = trainer.run()
                meter.close_stage()
                return meter, status, time.perf_counter() - started
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if device.type == "cuda":
                    torch.cuda.set_sync_debug_mode("warn")
                try:
                    status = _run_counting(trainer, caught, meter)
                finally:
                    if device.type == "cuda":
                        torch.cuda.set_sync_debug_mode("default")
            meter.close_stage()
            wall = time.perf_counter() - started
        finally:
            log.close()
    return meter, status, wall


def _run_counting(
    trainer: Trainer, caught: list[warnings.WarningMessage], meter: StageMeter
) -> str:
    """`trainer.run()`, folding the recorded sync warnings into the meter after each step
    and letting the busy probe measure a few of each stage's first steps."""
    original = trainer.train_step
    probe = BusyProbe(meter.device, caught)

    def counted(report: bool = False) -> Any:
        probe.before(trainer)
        out = original(report)
        meter.count_syncs(caught)
        caught.clear()
        if meter.rows:
            probe.after(trainer, meter.rows[-1])
        return out

    trainer.train_step = counted  # type: ignore[method-assign]
    try:
        return trainer.run()
    finally:
        probe.close()


def stage_figures(row: dict[str, Any], steps: int, cuda: bool) -> dict[str, float] | None:
    """Tokens/s, phase means, syncs/step and host overhead of one stage (None: no step events)."""
    events: list[Step] = row["steps"][1:] or row["steps"]  # the first window holds warm-up
    if not events:
        return None
    out = {"tokens_per_s": sum(e.tokens_per_s for e in events) / len(events)}
    for k in ("step_ms", "fwd_ms", "bwd_ms", "opt_ms"):
        out[k] = sum(getattr(e, k) or 0.0 for e in events) / len(events)
    out["syncs_per_step"] = row.get("syncs", 0) / steps if cuda else float("nan")
    nan2 = (math.nan, math.nan)
    out["steady_syncs"], out["change_syncs"] = steady_and_change(row) if cuda else nan2
    out["busy"] = row.get("busy", float("nan"))  # nan: n/a (CPU, or no window)
    host = host_overhead(row["steps"], row["arrived"])
    out["wall_tokens_per_s"], out["host_overhead"] = (
        (host[0], 1.0 - host[0] / host[1]) if host else (float("nan"), float("nan"))
    )
    return out


def report(
    meter: StageMeter,
    device: torch.device,
    status: str,
    wall: float,
    steps: int,
    batch: int,
    instrument: bool = True,
) -> int:
    cuda = device.type == "cuda" and instrument  # the columns only an instrumented pass has
    mode = "instrumented" if instrument else "plain (no sync debug mode, no profiler)"
    print(
        f"gpu_engine: {status} in {wall:.1f} s on {device}; batch {batch}, {steps} steps per "
        f"stage, {mode}"
    )
    head = (
        f"{'stage':<14} {'layers':>6} {'tok/s':>10} {'wall tok/s':>10} {'between':>7} {'idle':>6} "
        f"{'step ms':>8} {'fwd':>7} {'bwd':>7} {'opt':>7}"
    )
    print(
        head + f" {'syncs/step':>10} {'steady':>6} {'change':>6} {'peak mem':>9} {'freed':>8}"
        f" {'compile s':>9}"
    )
    for row in meter.rows:
        fig = stage_figures(row, steps, cuda)
        if fig is None:
            continue
        peak = f"{row['peak_bytes'] / 2**30:.1f} GiB" if "peak_bytes" in row else "n/a"
        freed = (
            f"{(row['freed_bytes'] or 0) / 2**20:.0f} MiB"
            if row["freed_bytes"] is not None
            else "n/a"
        )
        comp = f"{row['compile_s']:.1f}" if row["compile_s"] is not None else "-"
        print(
            f"{row['name']:<14} {row['layers']:>6} {fig['tokens_per_s']:>10,.0f} "
            f"{fig['wall_tokens_per_s']:>10,.0f} {100 * fig['host_overhead']:>6.1f}% "
            f"{pct(1 - fig['busy']):>6} "
            f"{fig['step_ms']:>8.1f} {fig['fwd_ms']:>7.1f} {fig['bwd_ms']:>7.1f} "
            f"{fig['opt_ms']:>7.1f} {syncs_cell(fig['syncs_per_step']):>10} {count_cell(fig['steady_syncs']):>6} {count_cell(fig['change_syncs']):>6} {peak:>9} {freed:>8} {comp:>9}"
        )
    print(
        "between = 1 - wall-clock tokens/s between step events / the engine's in-step tokens/s "
        "(host time outside the step: events, commands, the loop); the host's cost inside the "
        "step is the GPU's idle share there (idle)"
    )
    if cuda:
        print(
            f"idle = 1 - busy; busy = time the GPU runs kernels or copies in {BUSY_N} of the engine's steps under "
            f"torch.profiler / the wall time of the {BUSY_N} unprofiled steps before them (steps "
            f"{BUSY_WARM + 1}-{BUSY_WARM + 2 * BUSY_N} of each stage, before its first step event; "
            "n/a: a reported step fell inside)"
        )
    elif not instrument:
        print("busy, syncs/step: n/a in the plain pass (the instrumented pass counts them)")
    else:
        print("busy: n/a on CPU (torch.profiler's device time needs CUDA)")
    if not cuda and instrument:
        print("syncs/step: n/a on CPU (counted with CUDA's sync debug mode on a GPU)")
    else:
        print(
            "syncs/step = synchronizing calls over the stage / its steps; steady = the median "
            "step after the stage's first; change = the stage's first step (its stage change)"
        )
        if sites := sync_sites_lines(meter.rows, steps):
            print("sync sites (calls per step; the Python line that made the synchronizing call):")
            print("\n".join(sites))
    return 0 if status == "completed" else 1


def summary(
    meter: StageMeter, device: torch.device, steps: int, batch: int, instrument: bool = True
) -> str:
    """The one-line result of one batch size and pass (the loan folds them into its summary).
    The plain pass says tokens/s and host overhead only: its figures are the honest speed."""
    cuda = device.type == "cuda" and instrument
    figs = [f for f in (stage_figures(r, steps, cuda) for r in meter.rows) if f is not None]
    tps = ",".join(f"{f['tokens_per_s']:.0f}" for f in figs)
    host = ",".join(f"{100 * f['host_overhead']:.1f}" for f in figs)
    if not instrument:
        return (
            f"gpu_engine: batch={batch} stages={len(figs)} pass=plain tokens_per_s=[{tps}] "
            f"host_overhead_pct=[{host}] device={device.type.upper()}"
        )
    syncs = f"[{','.join(syncs_cell(f['syncs_per_step']) for f in figs)}]" if cuda else "n/a"
    steady = f"[{','.join(count_cell(f['steady_syncs']) for f in figs)}]" if cuda else "n/a"
    busy = f"[{','.join(pct(f['busy'], '') for f in figs)}]" if cuda else "n/a"
    idle = f"[{','.join(pct(1 - f['busy'], '') for f in figs)}]" if cuda else "n/a"
    return (
        f"gpu_engine: batch={batch} stages={len(figs)} pass=instrumented tokens_per_s=[{tps}] "
        f"gpu_idle_in_step_pct={idle} host_overhead_pct=[{host}] busy_pct={busy} "
        f"syncs_per_step={syncs} steady_syncs={steady} "
        f"device={device.type.upper()}"
    )


def pct(share: float, unit: str = "%") -> str:
    """A share as a percentage, "n/a" where there is none (nan)."""
    return "n/a" if math.isnan(share) else f"{100 * share:.0f}{unit}"


if __name__ == "__main__":
    sys.exit(main())
