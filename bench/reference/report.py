"""The step benchmark's tables: the product against its reference per configuration, the
operators it adds, the metrics' cost, MFU against both peaks, and the one-line summary.

MFU is printed against two peaks, labelled: the datasheet's (bench/gpu_datasheet.py,
dense bf16; n/a for a device not in the table, and on a CPU) and the one measured
on the spot (bench/gpu_roofline.py `measure_peak`: a square matmul loop), which no
real step reaches and which reads higher. compiled/eager is the product's compiled
twin over its eager self from the same interleaved rounds: one eager figure for both.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpu_datasheet import Datasheet, mfu
from gpu_roofline import Peak

from reference.op_count import top_differences
from reference.pairs import Timed

if TYPE_CHECKING:
    from reference.rows import Row


@dataclass(frozen=True)
class Peaks:
    measured: Peak
    datasheet: Datasheet | None


def median_ms(t: Timed) -> float:
    return statistics.median(t.chunk_ms) if t.chunk_ms else float("nan")


def round_ratios(product: Timed, reference: Timed) -> list[float]:
    """Each round's reference ms over product ms (the product's speed over the reference's)."""
    return [r / p for p, r in zip(product.chunk_ms, reference.chunk_ms, strict=True) if p > 0]


def vs(product: Timed, reference: Timed) -> float:
    """The product's speed over the reference's: the median over rounds of each round's
    ratio. The two run back to back in every round, so a round's ratio cancels the load
    that round saw (on a shared machine the chunks' own medians drift by tens of %)."""
    pairs = round_ratios(product, reference)
    return statistics.median(pairs) if pairs else float("nan")


def spread(product: Timed, reference: Timed) -> tuple[float, float]:
    """(lowest, highest) per-round ratio: how far one round can stray from the median
    (a target met by the median but not by most rounds is said to be within the noise)."""
    pairs = round_ratios(product, reference)
    return (min(pairs), max(pairs)) if pairs else (float("nan"), float("nan"))


def quartiles(product: Timed, reference: Timed) -> tuple[float, float]:
    """The per-round ratios' first and third quartiles (the middle half of the rounds)."""
    pairs = round_ratios(product, reference)
    if len(pairs) < 2:
        return spread(product, reference)
    q = statistics.quantiles(pairs, n=4, method="inclusive")
    return q[0], q[2]


def vs_fastest(product: Timed, reference: Timed) -> float:
    """The same ratio from each side's fastest chunk: on a loaded machine other jobs only
    ever add time to a chunk, so the fastest one of each is the least disturbed (timeit's
    rule); a second reading beside the median of per-round ratios, not a replacement."""
    if not product.chunk_ms or not reference.chunk_ms or min(product.chunk_ms) <= 0:
        return float("nan")
    return min(reference.chunk_ms) / min(product.chunk_ms)


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.1f} %"


def fmt_ops(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def mfus(flops: float, ms: float, peaks: Peaks) -> tuple[float | None, float | None]:
    """(MFU against the datasheet peak, against the measured peak)."""
    sheet = peaks.datasheet.bf16_tflops if peaks.datasheet else None
    return mfu(flops, ms, sheet), mfu(flops, ms, peaks.measured.tflops)


def bare_table(family: str, rows: list[Row], out: list[dict[str, Any]]) -> None:
    """Where each gap lives: the product's model math against the reference (bare), and the
    engine's step around it against that math (the step's own work: data, flags, metrics)."""
    print(
        f"{family}: the gap split: the product's model math alone (bare) against the reference, "
        "and the engine's step against its own model math"
    )
    print("| config | bare ms | bare vs_reference | step's own work |\n|---|---|---|---|")
    for r, item in zip(rows, out, strict=True):
        assert r.bare is not None
        math_ratio = vs(r.bare, r.reference)
        own = 1.0 / vs(r.product, r.bare) - 1.0
        print(f"| {r.label} | {median_ms(r.bare):.2f} | {math_ratio:.3f} | {own * 100:+.1f} % |")
        item.update(bare_ms=median_ms(r.bare), bare_vs_reference=math_ratio, step_own_work=own)


def mfu_table(family: str, rows: list[Row], out: list[dict[str, Any]], peaks: Peaks) -> None:
    sheet = peaks.datasheet
    sheet_label = (
        f"{sheet.name} {sheet.bf16_tflops:.0f} TFLOP/s" if sheet else "n/a: not in the table"
    )
    print(
        f"{family}: MFU (model FLOPs, bench/common.py) against the datasheet peak ({sheet_label}) "
        f"and the measured peak ({peaks.measured.tflops:.3g} TFLOP/s {peaks.measured.dtype} "
        f"matmul, measured here)"
    )
    head = "| config | GFLOP/step | product MFU datasheet | product MFU measured | reference MFU datasheet |"
    compiled = rows[0].compiled is not None
    if compiled:
        head += " compiled product MFU datasheet | compiled/eager product (same rounds) |"
    print(f"{head}\n|{'---|' * head.count(' | ')}")
    for r, item in zip(rows, out, strict=True):
        d, m = mfus(r.flops, median_ms(r.product), peaks)
        rd, _ = mfus(r.flops, median_ms(r.reference), peaks)
        item.update(flops=r.flops, mfu_datasheet=d, mfu_measured=m, reference_mfu_datasheet=rd)
        line = f"| {r.label} | {r.flops / 1e9:,.1f} | {pct(d)} | {pct(m)} | {pct(rd)} |"
        if r.compiled is not None:
            cd, cm = mfus(r.flops, median_ms(r.compiled[0]), peaks)
            ratio = vs(r.compiled[0], r.product)
            item.update(
                compiled_mfu_datasheet=cd, compiled_mfu_measured=cm, compiled_over_eager=ratio
            )
            line += f" {pct(cd)} | {ratio:.2f}× |"
        elif compiled:
            line += " - | - |"
        print(line)


def report(
    family: str, rows: list[Row], nometrics: Timed, default: Timed, peaks: Peaks
) -> dict[str, Any]:
    head = (
        "| config | product ms | reference ms | tok/s product | vs_reference | "
        "rounds' middle half | vs_reference fastest chunks | ops product | ops reference |"
    )
    if rows[0].compiled is not None:
        head += " compiled product ms | compiled reference ms | compiled vs_reference | compiled ops product | compiled ops reference |"
    print(f"\n{family}:\n{head}\n|{'---|' * head.count(' | ')}")
    out: list[dict[str, Any]] = []
    for r in rows:
        p, ref = r.product, r.reference
        q1, q3 = quartiles(p, ref)
        line = (
            f"| {r.label} | {median_ms(p):.2f} | {median_ms(ref):.2f} | "
            f"{p.tokens / median_ms(p) * 1e3:,.0f} | {vs(p, ref):.3f} | {q1:.3f}-{q3:.3f} | "
            f"{vs_fastest(p, ref):.3f} | {fmt_ops(p.ops)} | {fmt_ops(ref.ops)} |"
        )
        item: dict[str, Any] = {
            "config": r.label,
            "product_ms": median_ms(p),
            "reference_ms": median_ms(ref),
            "vs_reference": vs(p, ref),
            "vs_reference_quartiles": [q1, q3],
            "vs_reference_range": list(spread(p, ref)),
            "vs_reference_fastest": vs_fastest(p, ref),
            "product_ops": p.ops,
            "reference_ops": ref.ops,
            "product_chunks_ms": p.chunk_ms,
            "reference_chunks_ms": ref.chunk_ms,
            "extra_ops": top_differences(r.product_ops, r.reference_ops, r.count_steps),
            "product_launches": p.launches,
            "reference_launches": ref.launches,
        }
        if r.compiled is None and rows[0].compiled is not None:
            line += " - | - | - | - | - |"
        if r.compiled is not None:
            cp, cr = r.compiled
            line += (
                f" {median_ms(cp):.2f} | {median_ms(cr):.2f} | {vs(cp, cr):.3f} | "
                f"{fmt_ops(cp.ops)} | {fmt_ops(cr.ops)} |"
            )
            item.update(
                compiled_product_ms=median_ms(cp),
                compiled_reference_ms=median_ms(cr),
                compiled_vs_reference=vs(cp, cr),
                compiled_product_ops=cp.ops,
                compiled_reference_ops=cr.ops,
                compile_s=cp.warm_s,
                compiled_reference_warm_s=cr.warm_s,
            )
        print(line)
        out.append(item)
    if rows[0].bare is not None:
        bare_table(family, rows, out)
    mfu_table(family, rows, out, peaks)
    print(f"{family}: operators the product dispatches beyond the reference, per step:")
    for item in out:
        print(f"  {item['config']}: {item['extra_ops']}")
    if rows[0].product.launches is not None:
        print(f"{family}: CUDA kernel launches per step (profiler), product / reference:")
        for r in rows:
            line = f"  {r.label}: {fmt_ops(r.product.launches)} / {fmt_ops(r.reference.launches)}"
            if r.compiled is not None:
                c = r.compiled
                line += f"; compiled {fmt_ops(c[0].launches)} / {fmt_ops(c[1].launches)}"
            print(line)
    costs = {
        cadence: metrics_cost(family, cadence, twin, nometrics)
        for cadence, twin in (("the plan's", rows[0].product), ("the default", default))
    }
    plan_cost, default_cost = costs["the plan's"], costs["the default"]
    return {
        "rows": out,
        "metrics_cost": plan_cost["time"],
        "metrics_cost_fastest": plan_cost["time_fastest"],
        "metrics_cost_quartiles": plan_cost["time_quartiles"],
        "metrics_op_cost": plan_cost["ops"],
        "default_metrics_cost": default_cost["time"],
        "default_metrics_cost_fastest": default_cost["time_fastest"],
        "default_metrics_cost_quartiles": default_cost["time_quartiles"],
        "default_metrics_op_cost": default_cost["ops"],
        "nometrics_ms": median_ms(nometrics),
        "nometrics_ops": nometrics.ops,
        "default_metrics_ms": median_ms(default),
    }


def metrics_cost(family: str, cadence: str, with_: Timed, without: Timed) -> dict[str, Any]:
    """What the per-layer metrics add to the full-depth step at one cadence, printed."""
    cost = 1.0 / vs(with_, without) - 1.0
    cost_fastest = 1.0 / vs_fastest(with_, without) - 1.0
    q1, q3 = quartiles(with_, without)
    ops = with_.ops / without.ops - 1.0 if with_.ops and without.ops else None
    print(
        f"{family}: per-layer metrics at {cadence} cadence cost {cost * 100:+.1f} % of the "
        f"full-depth step's time ({median_ms(with_):.2f} vs {median_ms(without):.2f} ms "
        f"without; rounds' middle half {(1 / q3 - 1) * 100:+.1f} to {(1 / q1 - 1) * 100:+.1f} %; "
        f"{cost_fastest * 100:+.1f} % by the fastest chunks) and {pct(ops)} of its operators "
        f"({fmt_ops(with_.ops)} vs {fmt_ops(without.ops)} per step)"
    )
    return {
        "time": cost,
        "time_fastest": cost_fastest,
        "time_quartiles": [1 / q3 - 1, 1 / q1 - 1],
        "ops": ops,
    }


def summary(results: dict[str, dict[str, Any]], device: str, wall: float) -> str:
    parts = []
    for family, res in results.items():
        rows = res["rows"]
        full = rows[0]
        stages = [r["vs_reference"] for r in rows[1:]]
        d = full.get("mfu_datasheet")
        least = f"{min(stages):.3f}" if stages else "n/a"
        text = (
            f"{family} vs_reference={full['vs_reference']:.3f} stages_min={least} "
            f"fastest_chunks={full['vs_reference_fastest']:.3f} "
            f"mfu_datasheet={'n/a' if d is None else f'{d * 100:.1f}%'} "
            f"mfu_measured={full['mfu_measured'] * 100:.1f}% "
            f"ops={full['product_ops']:.0f}/{full['reference_ops']:.0f} "
            f"metrics_cost={res['metrics_cost'] * 100:+.1f}% "
            f"default_metrics_cost={res['default_metrics_cost'] * 100:+.1f}%"
        )
        if "compiled_vs_reference" in full:
            cstages = [r["compiled_vs_reference"] for r in rows[1:] if "compiled_vs_reference" in r]
            text += f" compiled_vs_reference={full['compiled_vs_reference']:.3f}"
            if cstages:
                text += f" compiled_stages_min={min(cstages):.3f}"
            cd = full.get("compiled_mfu_datasheet")
            text += f" compiled_mfu_datasheet={'n/a' if cd is None else f'{cd * 100:.1f}%'}"
        parts.append(text)
    return f"step_vs_reference: {' | '.join(parts)} wall_s={wall:.0f} device={device}"
