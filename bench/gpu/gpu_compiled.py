"""The GPU check's compiled pass: every stage configuration again, its blocks compiled.

`[optim] compile = true` compiles each block's forward on its own
(growcockpit/backend/loop/block_compile.py). The pass times that step next to
the eager one, configuration by configuration, so the table says what compiling
buys at every stage and how far the compiled step still is from the roofline.

Why a twin and not a second model: the twin shares its configuration's model,
optimizer and parameters and differs only in its `StagedForward`, whose
`compiled` is the run's one `BlockCompiler`; the eager configuration keeps its
own forward, eager. Why one compiler for every configuration (both families):
the engine keeps one for the whole run, so a stage whose blocks have the guards
of an earlier stage reuses its graphs. Each twin's warm-up, its first step
synchronized, is its compile: reported per configuration (seconds and the graphs
dynamo compiled; 0 graphs = reused) and kept out of the step times. Why after
the eager tables rather than inside their rounds: the eager tables stay what
they were, and with a budget too short for compiling they are all there is.
The pass then runs its own interleaved A/B rounds (the eager tables' steps,
shrunk to fit) over each configuration's compiled twin and an eager twin, side
by side, so compiled/eager is measured in one window, drift cancelled as in the
eager tables, and the compiled stage speedups are over the compiled baseline.

The rule (`compile_mode`, `eager_deadline`, `compiled_pass`):

* `--no-compile`: off. Default: on on CUDA, off on the CPU (inductor takes minutes
  there). `--compile`: on anywhere.
* When on, the eager tables of a family get `EAGER_SHARE` of the family's usable
  share of `--budget-s`; the pass gets the rest and what the eager tables left.
* On by default, the pass starts only if the time left covers the first compile's
  estimate (`FIRST_COMPILE_S`, per backend) plus every pair's fewest timed steps
  (one per round, eager and compiled) at the eager speed; `--compile` skips that.
* Either way a configuration is compiled only while the time left covers the
  longest compile so far plus those fewest steps of the pairs so far and its own;
  the others keep their rows, saying "not compiled: budget". The pairs then time
  as many steps as the eager tables did, fewer if that is what fits (`fit_steps`).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch
from gpu_configs import RESERVE_S, Config, fit_steps, make_step, timed_rounds

from growcockpit.backend.calibrate import Clock
from growcockpit.backend.data.blocks import Batch
from growcockpit.backend.loop.block_compile import BlockCompiler

BACKENDS = ("inductor", "aot_eager", "eager")  # `[optim] compile_backend`
EAGER_SHARE = 0.5  # of a family's usable share, for its eager tables, when the pass runs
# what the first configuration's compile (a block class's forward and backward) is expected
# to take, for the default-on rule: inductor generates and builds kernels, the others trace
FIRST_COMPILE_S = {"inductor": 45.0, "aot_eager": 10.0, "eager": 5.0}
MARGIN_S = 10.0  # kept back at the end of a family's share: its report


@dataclass
class CompileMode:
    """Whether the compiled pass runs, and why: printed, and in the JSON."""

    wanted: bool
    forced: bool  # --compile: no up-front estimate, only the per-configuration check
    backend: str
    reason: str


@dataclass
class CompiledRun:
    """One family's compiled pass: what the table's header says."""

    mode: CompileMode
    steps: int = 0  # timed steps per twin
    rounds: int = 0
    compile_s: float = 0.0  # every twin's warm-up together
    skipped: str = ""  # why the pass did not start, if it did not


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="time every stage again with its blocks compiled (`[optim] compile = true`), "
        "side by side with eager; default: on on CUDA when the budget allows, off on CPU",
    )
    ap.add_argument(
        "--compile-backend",
        choices=BACKENDS,
        default="inductor",
        help="`[optim] compile_backend` for the compiled pass (default: %(default)s)",
    )


def compile_mode(args: argparse.Namespace, device: torch.device) -> CompileMode:
    backend = args.compile_backend
    if args.compile is False:
        return CompileMode(False, False, backend, "off (--no-compile)")
    if args.compile:
        return CompileMode(True, True, backend, "on (--compile)")
    if device.type == "cuda":
        return CompileMode(True, False, backend, "on by default on CUDA, when the budget allows")
    return CompileMode(
        False, False, backend, "off by default on the CPU (inductor takes minutes); --compile"
    )


def eager_deadline(start: float, share: float, mode: CompileMode) -> float:
    """When a family's eager tables must end: its whole share without the pass; with it,
    `EAGER_SHARE` of the usable part, the eager extras' reserve kept behind that."""
    if not mode.wanted or not math.isfinite(share):
        return share
    return min(share, start + EAGER_SHARE * max(0.0, share - start - RESERVE_S) + RESERVE_S)


def dynamo_graphs() -> int | None:
    """Graphs dynamo has compiled so far in this process (None where torch keeps no count)."""
    try:
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])
    except Exception:
        return None


def compiled_pass(
    configs: list[Config],
    batches: list[Batch],
    amp: Callable[[], Any],
    grad_clip: float,
    clock: Clock,
    device: torch.device,
    counts: tuple[int, int, int],
    compiler: BlockCompiler | None,
    mode: CompileMode,
    deadline: float,
) -> CompiledRun:
    """Compile and time a twin of every configuration that fits before `deadline`; each
    configuration's `compiled_ms`, `compile_s`, `compile_graphs` and `compile_status` say
    what happened to it."""
    steps, warmup, rounds = counts
    run = CompiledRun(mode)
    for c in configs:
        c.compile_status = "off"
    if not mode.wanted or compiler is None:
        return run
    # a pair's fewest timed steps (one per round, eager and compiled) at the eager speed
    eager_steps_s = {id(c): 2 * statistics.median(c.times_ms) * rounds / 1e3 for c in configs}
    left = deadline - time.monotonic() - MARGIN_S
    need = FIRST_COMPILE_S[mode.backend] + sum(eager_steps_s.values())
    if not mode.forced and left < need:
        run.skipped = f"budget: {max(0.0, left):.0f} s left, needs ~{need:.0f} s"
        print(f"gpu_check: compiled pass skipped ({run.skipped}; --compile forces it)")
        for c in configs:
            c.compile_status = "not compiled: budget"
        return run
    pairs: list[tuple[Config, Config, Config]] = []  # configuration, eager twin, compiled
    step_fns: dict[int, Callable[[], None]] = {}
    longest, planned, failed = 0.0, 0.0, ""
    for c in configs:
        planned += eager_steps_s[id(c)]
        if failed or deadline - time.monotonic() - MARGIN_S < longest + planned:
            c.compile_status = f"not compiled: {failed or 'budget'}"
            continue
        twin = replace(c, forward=replace(c.forward, compiled=compiler), times_ms=[])
        step = make_step(twin, batches, amp, grad_clip)
        before = dynamo_graphs()
        clock.sync()
        t = time.perf_counter()
        try:
            step()
            clock.sync()
        except Exception as exc:  # a backend that cannot build here: the eager rows stand
            c.optimizer.zero_grad(set_to_none=True)
            first = str(exc).splitlines()[0][:80] if str(exc) else ""
            failed = f"{mode.backend} failed ({type(exc).__name__}: {first})"
            c.compile_status = f"not compiled: {failed}"
            print(f"gpu_check: {c.label}: compile {failed}")
            failed = "an earlier compile failed"
            continue
        c.compile_s = time.perf_counter() - t
        after = dynamo_graphs()
        c.compile_graphs = after - before if after is not None and before is not None else None
        longest = max(longest, c.compile_s)
        run.compile_s += c.compile_s
        eager = replace(c, times_ms=[])
        pairs.append((c, eager, twin))
        step_fns[id(twin)] = step
        step_fns[id(eager)] = make_step(eager, batches, amp, grad_clip)
    if pairs:
        timed = [t for _, eager, twin in pairs for t in (eager, twin)]
        n = fit_steps(timed, step_fns, clock, max(1, warmup), steps, rounds, deadline, MARGIN_S)
        run.steps = n
        run.rounds, _ = timed_rounds(timed, step_fns, clock, device, n, rounds, deadline, MARGIN_S)
        for c, eager, twin in pairs:
            c.paired_eager_ms, c.compiled_ms = eager.times_ms, twin.times_ms
            c.compile_status = "timed"
    return run


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def compiled_columns(rows: list[dict[str, Any]], configs: list[Config], tokens: int) -> None:
    """The compiled pass's columns of every row (None where it was not timed): the eager
    twin's step ms, the compiled twin's step ms and tokens/s, compiled over eager (the
    pair's medians), measured/bound of both, the compiled stage speedup over the compiled
    baseline (rows[0]), and the warm-up."""
    base_ms = _median(configs[0].compiled_ms)
    for row, c in zip(rows, configs, strict=True):
        ms, eager_ms = _median(c.compiled_ms), _median(c.paired_eager_ms)
        tflops = _ratio(row["flops_per_step"] / 1e12, ms / 1e3 if ms else None)
        row.update(
            {
                "compile_status": c.compile_status,
                "compile_s": c.compile_s,
                "compile_graphs": c.compile_graphs,
                "compiled_timed_steps": len(c.compiled_ms),
                "compiled_step_ms": ms,
                "compiled_tokens_per_s": _ratio(tokens, ms / 1e3 if ms else None),
                "paired_eager_step_ms": eager_ms,
                "compiled_over_eager": _ratio(eager_ms, ms),
                "paired_eager_over_bound": _ratio(eager_ms, row["bound_ms"]),
                "compiled_over_bound": _ratio(ms, row["bound_ms"]),
                "compiled_speedup": _ratio(base_ms, ms),
                "compiled_tflops": tflops,
            }
        )


def print_compiled(run: CompiledRun, rows: list[dict[str, Any]]) -> None:
    """The eager/compiled table, every configuration a row (one not compiled says why)."""
    mode = run.mode
    print()
    if not mode.wanted:
        print(f"Compiled: not timed: {mode.reason}")
        return
    print(
        f"Compiled (each block's forward, backend {mode.backend}) vs eager, after the eager "
        f"tables: medians of {run.steps} steps per config and mode, eager and compiled side by "
        f"side in {run.rounds} interleaved rounds;"
    )
    print(
        "eager ms: the eager twin in these rounds; compile s = the warm-up (the first compiled "
        "step, synchronized; not in the step times), graphs = new graphs it compiled (0: "
        "reused); speedup and model: over the compiled baseline; ms/bound = measured / bound"
        + (f"; pass skipped ({run.skipped})" if run.skipped else "")
    )
    head = (
        f"{'stage':<22} {'eager ms':>9} {'comp ms':>9} {'comp/eag':>8} {'ms/bound':>8} "
        f"{'comp/bnd':>8} {'speedup':>8} {'model':>7} {'compile s':>9} {'graphs':>6}"
    )
    print(head)
    print("-" * len(head))
    for row in rows:
        if row["compiled_step_ms"] is None:  # the eager table's step, and why not compiled
            print(f"{row['config']:<22} {row['step_ms']:>9.2f} {row['compile_status']}")
            continue
        start = f"{row['config']:<22} {row['paired_eager_step_ms']:>9.2f}"
        graphs = row["compile_graphs"]
        speedup = row["compiled_speedup"]
        print(
            f"{start} {row['compiled_step_ms']:>9.2f} {row['compiled_over_eager']:>7.2f}x "
            f"{row['paired_eager_over_bound']:>8.1f} {row['compiled_over_bound']:>8.1f} "
            + (f"{speedup:>7.2f}x" if speedup is not None else f"{'n/a':>8}")
            + f" {row['model_speedup']:>6.2f}x {row['compile_s']:>9.1f} "
            + (f"{graphs:>6}" if graphs is not None else f"{'n/a':>6}")
        )
    print(f"compile: {run.compile_s:.1f} s of warm-ups in all (counted against the budget)")


def compiled_summary(run: CompiledRun | None, rows: list[dict[str, Any]]) -> str:
    """The summary's compiled figure: the compiled baseline's tokens/s and its speedup over
    the eager baseline; "not-compiled" when the pass was wanted but the baseline missed it."""
    if run is None or not run.mode.wanted:
        return ""
    base = rows[0]
    if base["compiled_step_ms"] is None:
        return " compiled=not-compiled"
    return (
        f" compiled_baseline={base['compiled_tokens_per_s']:.0f}tok/s "
        f"compiled_over_eager={base['compiled_over_eager']:.2f}x compile_s={run.compile_s:.1f}"
    )


def compiled_json(run: CompiledRun | None) -> dict[str, Any] | None:
    if run is None:
        return None
    mode = run.mode
    return {
        "wanted": mode.wanted,
        "forced": mode.forced,
        "backend": mode.backend,
        "reason": mode.reason,
        "steps_per_config": run.steps,
        "rounds": run.rounds,
        "compile_s": run.compile_s,
        "skipped": run.skipped or None,
    }
