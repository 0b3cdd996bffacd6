"""The GPU check's tables, JSON and one-line summary (bench/gpu/gpu_check.py measures, this reports).

Per configuration: tokens/s, step ms, the measured speedup over the baseline
step next to the cost model's (r, h measured on the spot, and r = 2); then the
roofline table (FLOPs per step, the bound at this device's measured peak,
measured / bound, TFLOP/s, MFU against the measured peak, GPU utilisation,
busy share, extra memory), the fwd/bwd/opt split and the compiled pass's
eager/compiled table (bench/gpu/gpu_compiled.py). The last line returned is the
summary gpu_check.sh folds into its own.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from gpu_activations import activation_bytes
from gpu_compiled import (
    CompiledRun,
    compiled_columns,
    compiled_json,
    compiled_summary,
    print_compiled,
)
from gpu_configs import Config
from gpu_datasheet import datasheet_for, mfu
from gpu_roofline import Peak, UtilSampler, config_bytes, roofline_ms

from growcockpit.plan import estimate_cost
from growcockpit.plan.flops import stage_step_flops
from growcockpit.plan.types import Plan


@dataclass
class Context:
    """One family's measurements: its grown plan, its full-depth baseline, their configs
    (the baseline's first, tagged `base_tag`; the grown plan's tagged `grown_tag`)."""

    args: argparse.Namespace
    device: torch.device
    device_label: str
    dtype: str
    family: str  # "bert" | "llama": the key of its JSON section and summary part
    grown: Plan
    base: Plan
    grown_tag: str
    base_tag: str
    paths: dict[str, str]  # where the two plans came from (the baseline may be derived)
    configs: list[Config]
    rh: dict[str, float]
    h_model: float
    peak: Peak
    sampler: UtilSampler
    peak_mem: int
    rounds: int
    n_parts: int
    data_ms: float
    elapsed: float
    compiled: CompiledRun | None = None  # the compiled pass (None: not part of this run)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def fmt_mem(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return 0.0
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def build_rows(ctx: Context) -> list[dict[str, Any]]:
    cuda = ctx.device.type == "cuda"
    r, h = ctx.rh["r"], ctx.rh["h"]
    cost = estimate_cost(ctx.grown, r=r, h=h)
    cost_textbook = estimate_cost(ctx.grown, r=2.0, h=ctx.h_model)
    base_ms = statistics.median(ctx.configs[0].times_ms)
    tokens = ctx.grown.optim.batch_size * ctx.grown.data.seq_len
    act_bytes = 2 if ctx.dtype in ("bf16", "fp16") else 4
    sheet = datasheet_for(ctx.device_label) if cuda else None
    rows: list[dict[str, Any]] = []
    for c in ctx.configs:
        ms = statistics.median(c.times_ms)
        grown = c.plan == ctx.grown_tag
        plan = ctx.grown if grown else ctx.base
        if grown:
            rel = cost.stages[c.stage_index].rel_step_cost
            rel2 = cost_textbook.stages[c.stage_index].rel_step_cost
        else:
            rel = rel2 = 1.0
        measured = base_ms / ms if ms > 0 else 0.0
        predicted = 1.0 / rel if rel > 0 else 0.0
        flops = stage_step_flops(plan)[c.stage_index]  # the product's count
        acts = activation_bytes(plan, c.stage_index, act_bytes)
        roof = roofline_ms(flops, config_bytes(c, act_bytes) + acts, ctx.peak)
        tflops = flops / (ms / 1e3) / 1e12 if ms > 0 else 0.0
        rows.append(
            {
                "config": c.label,
                "family": ctx.family,
                "plan": c.plan,
                "stage": c.stage_index + 1,
                "name": c.name,
                "steps_in_plan": c.steps_in_plan,
                "depth": c.depth,
                "trainable_layers": c.trainable,
                "embeddings_trainable": c.embeddings_trainable,
                "frozen_prefix": c.forward.frozen_prefix,
                "timed_steps": len(c.times_ms),
                "step_ms": ms,
                "step_ms_p10": quantile(c.times_ms, 0.1),
                "step_ms_p90": quantile(c.times_ms, 0.9),
                "tokens_per_s": tokens / (ms / 1e3) if ms > 0 else 0.0,
                "measured_speedup": measured,
                "model_speedup": predicted,
                "model_speedup_r2": 1.0 / rel2 if rel2 > 0 else 0.0,
                "measured_over_model": measured / predicted if predicted > 0 else 0.0,
                "flops_per_step": flops,
                **roof,
                "measured_over_bound": ms / roof["bound_ms"] if roof["bound_ms"] > 0 else 0.0,
                "tflops": tflops,
                "activation_bytes": acts,
                "mfu": tflops / ctx.peak.tflops if ctx.peak.tflops > 0 else None,
                "mfu_datasheet": mfu(flops, ms, sheet.bf16_tflops) if sheet else None,
                "gpu_util_mean": statistics.fmean(c.util) if c.util else None,
                "gpu_util_window_s": c.util_window_s or None,
                "gpu_busy_share": c.busy,
                "gpu_power_w_mean": statistics.fmean(c.power) if c.power else None,
                "extra_mem_bytes": c.extra_mem if cuda else None,
                **c.parts,
            }
        )
    compiled_columns(rows, ctx.configs, tokens)
    return rows


def trainable_text(c: dict[str, Any]) -> str:
    ids = c["trainable_layers"]
    txt = "all" if len(ids) == c["depth"] else (f"{ids[0]}-{ids[-1]}" if ids else "none")
    return txt + ("+emb" if c["embeddings_trainable"] else "")


def print_speed(ctx: Context, rows: list[dict[str, Any]]) -> None:
    base = ctx.configs[0]
    head = (
        f"{'stage':<22} {'depth':>5} {'trainable':>10} {'tok/s':>10} {'step ms':>9} {'p10-p90':>13} "
        f"{'speedup':>8} {'model':>7} {'meas/mod':>8} {'r=2':>6}"
    )
    print()
    print(
        f"Per-step cost of every stage config vs the baseline step ({base.label}: "
        f"{rows[0]['step_ms']:.2f} ms),"
    )
    print(f"medians of {len(base.times_ms)} steps per config over {ctx.rounds} interleaved rounds;")
    print(
        f"model = the cost model with measured r = {ctx.rh['r']:.2f}, h = {ctx.rh['h']:.2f}; "
        f"r=2 column: textbook r = 2, analytic h = {ctx.h_model:.2f}"
    )
    print(head)
    print("-" * len(head))
    for row in rows:
        spread = f"{row['step_ms_p10']:.1f}-{row['step_ms_p90']:.1f}"
        print(
            f"{row['config']:<22} {row['depth']:>5} {trainable_text(row):>10} {row['tokens_per_s']:>10.0f} "
            f"{row['step_ms']:>9.2f} {spread:>13} {row['measured_speedup']:>7.2f}x "
            f"{row['model_speedup']:>6.2f}x {row['measured_over_model']:>8.2f} "
            f"{row['model_speedup_r2']:>5.2f}x"
        )


def print_roofline(ctx: Context, rows: list[dict[str, Any]]) -> None:
    p = ctx.peak
    print()
    print(
        f"Roofline at the measured peak ({p.tflops:.3g} TFLOP/s {p.dtype}, {p.gbps:.0f} GB/s): "
        "bound = max(FLOPs / peak, bytes / bandwidth); bytes = weights + AdamW state + "
        "activations (bench/gpu/gpu_activations.py), a lower bound. MFU sheet: against the "
        "datasheet's dense bf16 peak (bench/gpu/gpu_datasheet.py; n/a off the table); MFU meas.: "
        "against the peak measured here, which reads higher"
    )
    head = (
        f"{'stage':<22} {'GFLOP':>9} {'bound ms':>9} {'step ms':>9} {'ms/bound':>8} "
        f"{'TFLOP/s':>8} {'MFU sheet':>9} {'MFU meas.':>9} {'util%':>6} {'busy%':>6} {'+mem':>9}"
    )
    print(head)
    print("-" * len(head))
    for row in rows:
        util = f"{row['gpu_util_mean']:.0f}" if row["gpu_util_mean"] is not None else "n/a"
        busy = f"{100 * row['gpu_busy_share']:.0f}" if row["gpu_busy_share"] is not None else "n/a"
        mem = fmt_mem(row["extra_mem_bytes"]) if row["extra_mem_bytes"] is not None else "n/a"
        measured = f"{100 * row['mfu']:.1f}%" if row["mfu"] is not None else "-"
        sheet = row["mfu_datasheet"]
        on_sheet = f"{100 * sheet:.1f}%" if sheet is not None else "n/a"
        print(
            f"{row['config']:<22} {row['flops_per_step'] / 1e9:>9.2f} {row['bound_ms']:>9.3f} "
            f"{row['step_ms']:>9.2f} {row['measured_over_bound']:>8.1f} {row['tflops']:>8.2f} "
            f"{on_sheet:>9} {measured:>9} {util:>6} {busy:>6} {mem:>9}"
        )


def print_breakdown(ctx: Context) -> None:
    if not all(c.parts for c in ctx.configs):
        print("Breakdown: skipped (budget)")
        return
    print()
    print(
        f"Breakdown (median of {ctx.n_parts} steps, synchronized between phases; "
        "opt = clip + AdamW step + zero_grad):"
    )
    print(f"{'stage':<22} {'fwd ms':>9} {'bwd ms':>9} {'opt ms':>9} {'opt share':>9}")
    for c in ctx.configs:
        total = sum(c.parts.values())
        print(
            f"{c.label:<22} {c.parts['fwd_ms']:>9.2f} {c.parts['bwd_ms']:>9.2f} {c.parts['opt_ms']:>9.2f} "
            f"{100 * c.parts['opt_ms'] / total if total > 0 else 0:>8.0f}%"
        )


def util_line(ctx: Context) -> str:
    s = ctx.sampler
    if ctx.device.type != "cuda":
        return "GPU util: n/a (running on CPU)"
    if s.unavailable:
        return f"GPU util: n/a ({s.unavailable})"
    if s.all_util:
        return (
            f"GPU util: mean {statistics.fmean(s.all_util):.0f}% over {len(s.all_util)} NVML "
            "samples (one ≥ 2 s window per config)"
        )
    return "GPU util: n/a (no samples: no time left for the windows)"


@dataclass
class FamilyReport:
    """What one family's tables leave behind: its part of the summary line and of the JSON."""

    family: str
    summary: str
    result: dict[str, Any]


def write_report(ctx: Context) -> FamilyReport:
    """Print one family's tables and closing lines; return its summary part and JSON section."""
    rows = build_rows(ctx)
    cuda = ctx.device.type == "cuda"
    print()
    print(
        f"== {ctx.family}: {ctx.paths[ctx.grown_tag]} ({len(ctx.grown.stages)} stages) vs "
        f"{ctx.paths[ctx.base_tag]}"
    )
    print_speed(ctx, rows)
    print_roofline(ctx, rows)
    print_breakdown(ctx)
    if ctx.compiled is not None:
        print_compiled(ctx.compiled, rows)
    r, h = ctx.rh["r"], ctx.rh["h"]
    cost = estimate_cost(ctx.grown, r=r, h=h)
    cost_textbook = estimate_cost(ctx.grown, r=2.0, h=ctx.h_model)
    g_rows = [row for row in rows if row["plan"] == ctx.grown_tag]
    total_steps = sum(row["steps_in_plan"] for row in g_rows)
    grown_ms = sum(row["steps_in_plan"] * row["step_ms"] for row in g_rows)
    base_ms = rows[0]["step_ms"]
    base_steps = ctx.base.total_steps
    schedule_speedup = (base_steps * base_ms) / grown_ms if grown_ms > 0 else 0.0
    print()
    print(
        f"schedule: {ctx.grown.name} {total_steps} steps ≈ {grown_ms / 1e3:.1f} s vs baseline "
        f"{base_steps} steps ≈ {base_steps * base_ms / 1e3:.1f} s → measured speedup "
        f"{schedule_speedup:.2f}x (model {cost.speedup:.2f}x with r = {r:.2f}, h = {h:.2f}; "
        f"{cost_textbook.speedup:.2f}x with r = 2, h = {ctx.h_model:.2f})"
    )
    if base_steps != total_steps:
        print(f"  note: the plans' total steps differ ({total_steps} vs {base_steps})")
    print(util_line(ctx))
    if cuda:
        print(
            f"peak memory: {fmt_mem(ctx.peak_mem)} allocated (all {len(ctx.configs)} configs "
            "resident; +mem column = extra while stepping)"
        )
    bs = ctx.grown.optim.batch_size
    print(
        f"host data: train_batch {ctx.data_ms:.1f} ms per batch of {bs} (prefetched on a thread "
        f"by the engine, not included above; {100 * ctx.data_ms / base_ms:.0f}% of a baseline step)"
    )
    # the last frozen-bottom stage is the headline (BERT-Base: stage 4 = grow-12; Llama:
    # stage 3 = middle-30)
    frozen_rows = [row for row in g_rows if len(row["trainable_layers"]) < row["depth"]]
    key = frozen_rows[-1] if frozen_rows else g_rows[-1]
    tokens = bs * ctx.grown.data.seq_len
    part = (
        f"stage{key['stage']}_speedup={key['measured_speedup']:.2f}x (model "
        f"{key['model_speedup']:.2f}x) schedule_speedup={schedule_speedup:.2f}x (model "
        f"{cost.speedup:.2f}x) r={r:.2f} h={h:.2f} baseline={tokens / (base_ms / 1e3):.0f}tok/s "
        f"mfu_datasheet={_pct(rows[0]['mfu_datasheet'])} mfu_measured={_pct(rows[0]['mfu'])} "
        f"roofline_ratio={rows[0]['measured_over_bound']:.1f}"
        + compiled_summary(ctx.compiled, rows)
    )
    schedule = {
        "measured_speedup": schedule_speedup,
        "model_speedup": cost.speedup,
        "model_speedup_r2": cost_textbook.speedup,
        "grown_seconds": grown_ms / 1e3,
        "baseline_seconds": base_steps * base_ms / 1e3,
    }
    return FamilyReport(ctx.family, part, family_json(ctx, rows, schedule))


def family_json(
    ctx: Context, rows: list[dict[str, Any]], schedule: dict[str, float]
) -> dict[str, Any]:
    """One family's JSON section: its rows, schedule, r and h, memory and both plans."""
    cuda = ctx.device.type == "cuda"
    return {
        "family": ctx.family,
        "dtype": ctx.dtype,
        "plans": ctx.paths,
        "batch_size": ctx.grown.optim.batch_size,
        "seq_len": ctx.grown.data.seq_len,
        "tokens_per_step": ctx.grown.optim.batch_size * ctx.grown.data.seq_len,
        "steps_per_config": len(ctx.configs[0].times_ms),
        "rounds": ctx.rounds,
        "r_h": ctx.rh,
        "h_analytic": ctx.h_model,
        "rows": rows,
        "schedule": schedule,
        "compiled": compiled_json(ctx.compiled),
        "gpu_util_mean": statistics.fmean(ctx.sampler.all_util) if ctx.sampler.all_util else None,
        "gpu_util_unavailable": ctx.sampler.unavailable,
        "peak_memory_bytes": ctx.peak_mem if cuda else None,
        "host_data_ms_per_batch": ctx.data_ms,
        "elapsed_s": ctx.elapsed,
        "plan": dataclasses.asdict(ctx.grown),
        "baseline_plan": dataclasses.asdict(ctx.base),
    }


def summary_line(reports: list[FamilyReport], peak: Peak, elapsed: float, device_label: str) -> str:
    """The one-line result: BERT's part first and unprefixed (the line it always was), then
    each other family's behind its name, then what they share."""
    parts = [r.summary if r.family == "bert" else f"{r.family}: {r.summary}" for r in reports]
    return (
        f"gpu_check: {' '.join(parts)} peak={peak.tflops:.3g}TFLOP/s elapsed={elapsed:.0f}s "
        f"device={device_label}"
    )


def write_json(
    path: Path,
    common: dict[str, Any],
    reports: list[FamilyReport],
    summary: str,
) -> None:
    """The results file: what all families share, BERT's section at the top level (where it
    always was, its plan also as `mslt_plan`), every other family's under its name."""
    result: dict[str, Any] = {**common, "families": [r.family for r in reports]}
    for r in reports:
        if r.family == "bert":  # the whole run's keys (device, elapsed time) stay the run's
            result.update({k: v for k, v in r.result.items() if k not in common})
            result["mslt_plan"] = r.result["plan"]
        else:
            result[r.family] = r.result
    result["summary"] = summary
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, default=str))
    print(f"results: {path}")
