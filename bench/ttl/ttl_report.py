"""Tables, seed summaries and text plots of bench/time_to_loss.py results."""

from __future__ import annotations

import re
import statistics
from typing import Any

from common import Size
from ttl_sweep import sweep_markdown

MARKERS = {"baseline": "b", "mslt": "m", "gong": "g", "vcycle": "v", "plan": "p"}
SPARE_MARKERS = "MxoXs+#@BPVGw"


def fmt_x(v: float | None) -> str:
    return f"{v:.2f}x" if v else "n/r"


def spread(values: list[float]) -> dict[str, float] | None:
    """Median, min and max of `values` (None when empty)."""
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarise(runs: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per method over the seeds: median/min/max of final loss, Δ, speedups, cost; reached n/N.

    A seed on which the method never reached the target counts as a 0× speedup in the
    median (so "median ≥ 2×" needs most seeds to get there), and `reached` says how many did.
    """
    by_method: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        for name, res in run.items():
            by_method.setdefault(name, []).append(res)
    out: dict[str, dict[str, Any]] = {}
    for name, results in by_method.items():
        ok = [r for r in results if "final_val_loss" in r]
        out[name] = {
            "seeds": [r["seed"] for r in results],
            "reached": sum(1 for r in ok if r.get("reach")),
            "final_val_loss": spread([r["final_val_loss"] for r in ok]),
            "delta": spread([r["final_val_loss"] - r["target"] for r in ok]),
            "speedup_wall": spread([r.get("speedup_wall") or 0.0 for r in ok]),
            "speedup_flops": spread([r.get("speedup_flops") or 0.0 for r in ok]),
            "flops_ratio": spread([r["flops_ratio"] for r in ok if r.get("flops_ratio")]),
            "wall_ratio": spread([r["wall_ratio"] for r in ok if r.get("wall_ratio")]),
            "steps": spread([float(r["steps"]) for r in ok]),
            "lr": results[0].get("lr"),  # set when an LR sweep picked it (ttl_sweep.py)
        }
    return out


def _range(s: dict[str, float] | None, fmt: str, suffix: str = "") -> str:
    if s is None:
        return "-"
    if s["min"] == s["max"]:
        return f"{s['median']:{fmt}}{suffix}"
    return f"{s['median']:{fmt}}{suffix} ({s['min']:{fmt}}–{s['max']:{fmt}})"


def size_line(family: str, size: Size, budget: int | None, lr: str | None = None) -> str:
    what = (
        f"budget = {budget} baseline steps ({budget * size.batch * size.seq / 1e6:.2f} M tokens "
        "at full depth) for every method"
        if budget
        else f"{size.steps} steps ({size.steps * size.batch * size.seq / 1e6:.2f} M tokens) for every method"
    )
    return (
        f"== {family}: {size.layers} layers × {size.hidden} ({size.heads} heads, FFN {size.ffn}), "
        f"seq {size.seq}, batch {size.batch}, vocab {size.vocab}, {lr or f'lr {size.lr:g}'}, "
        f"each plan's LR schedule (linear decay unless wsd); {what}"
    )


def seed_table(runs: list[dict[str, dict[str, Any]]]) -> list[str]:
    head = (
        f"{'seed':>4} {'method':<24}{'steps':>6}{'wall s':>8}{'PFLOP':>8}{'cost':>6}{'final val':>10}"
        f"{'Δ':>7}{'s→base':>8}{'PF→base':>8}{'speedup':>8}{'FLOPs':>7}"
    )
    lines = [head, "-" * len(head)]
    for run in runs:
        for name, res in run.items():
            if "final_val_loss" not in res:
                why = "unfinished" if res.get("evals") else "no eval"
                lines.append(
                    f"{res['seed']:>4} {name:<24} ({why}: {res['status']}, rc {res['rc']})"
                )
                continue
            reach = res["reach"]
            to_s = f"{reach['wall_s']:.0f}" if reach else "n/r"
            to_f = f"{reach['flops'] / 1e15:.3f}" if reach else "n/r"
            lines.append(
                f"{res['seed']:>4} {name:<24}{res['steps']:>6}{res['wall_s']:>8.0f}"
                f"{res['flops'] / 1e15:>8.3f}{res['flops_ratio']:>6.2f}{res['final_val_loss']:>10.3f}"
                f"{res['final_val_loss'] - res['target']:>+7.3f}"
                f"{to_s:>8}{to_f:>8}"
                f"{fmt_x(res['speedup_wall']):>8}{fmt_x(res['speedup_flops']):>7}"
            )
    return lines


def summary_table(summary: dict[str, dict[str, Any]]) -> list[str]:
    head = (
        f"{'method':<24}{'reached':>8}  {'final val':<22}{'Δ vs baseline':<24}"
        f"{'speedup wall':<22}{'speedup FLOPs':<22}{'cost':<18}"
    )
    lines = [head, "-" * len(head)]
    for name, s in summary.items():
        lines.append(
            f"{name:<24}{s['reached']:>4}/{len(s['seeds']):<3}  {_range(s['final_val_loss'], '.3f'):<22}"
            f"{_range(s['delta'], '+.3f'):<24}{_range(s['speedup_wall'], '.2f', 'x'):<22}"
            f"{_range(s['speedup_flops'], '.2f', 'x'):<22}{_range(s['flops_ratio'], '.2f'):<18}"
        )
    return lines


def _speedup_range(s: dict[str, float] | None) -> str:
    """Like `_range`, with a seed that never reached the loss (0) shown as n/r."""
    if s is None or s["max"] == 0:
        return "not reached"
    return _range(s, ".2f", "×").replace("0.00×", "n/r").replace("0.00–", "n/r–")


def markdown(data: dict[str, Any]) -> str:
    """The seed summaries of a --json as Markdown tables (for the README)."""
    out = []
    for family, fam in data["families"].items():
        out.append(
            f"| {family} method | seeds reached | final val loss | Δ vs baseline | FLOPs to baseline's loss "
            "| wall time to baseline's loss | steps | est. FLOPs |"
        )
        out.append("|---|---|---|---|---|---|---|---|")
        for name, s in fam["summary"].items():
            shown = f"{name} (lr {s['lr']:g})" if s.get("lr") else name
            out.append(
                f"| {shown} | {s['reached']}/{len(s['seeds'])} | {_range(s['final_val_loss'], '.3f')} "
                f"| {_range(s['delta'], '+.3f')} | {_speedup_range(s['speedup_flops'])} "
                f"| {_speedup_range(s['speedup_wall'])} | {_range(s['steps'], '.0f')} "
                f"| {_range(s['flops_ratio'], '.2f', '×')} |"
            )
        out.append("")
        if fam.get("lr_sweep"):
            out.append("Median final validation loss per peak LR (bold: the LR compared above):")
            out.append("")
            out += sweep_markdown(fam["lr_sweep"], family)
            out.append("")
    return "\n".join(out)


def report_family(
    family: str,
    size: Size,
    runs: list[dict[str, dict[str, Any]]],
    budget: int | None,
    lr: str | None = None,
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Print the family's per-seed table and seed summary; (summary, last-line items)."""
    print()
    print(size_line(family, size, budget, lr))
    print("\n".join(seed_table(runs)))
    summary = summarise(runs)
    print()
    print(f"medians (min–max) over {len(runs)} seed(s); a seed that did not reach counts as 0x:")
    print("\n".join(summary_table(summary)))
    print(
        "cost = estimated FLOPs / the baseline's; Δ = final val − the baseline's final val (same seed); "
        "s→base / PF→base: training s / PFLOP to first reach the baseline's final val loss; "
        "speedup = the baseline's / the method's"
    )
    items = []
    for name, s in summary.items():
        if name == "baseline":
            continue
        key = re.sub(r"[^A-Za-z0-9]+", "_", name)
        items.append(
            f"{family}.{key}_speedup_to_baseline_loss={fmt_x(s['speedup_wall'] and s['speedup_wall']['median'])}"
            f" {family}.{key}_flops_speedup={fmt_x(s['speedup_flops'] and s['speedup_flops']['median'])}"
            + (f" {family}.{key}_final_delta={s['delta']['median']:+.3f}" if s["delta"] else "")
        )
    return summary, items


def _marker(name: str, used: set[str]) -> str:
    marker = MARKERS.get(name, MARKERS.get(name.split("-")[0].split(":")[0], "*"))
    if marker in used:  # a second variant of one method gets its own symbol
        marker = next((c for c in SPARE_MARKERS if c not in used), "*")
    used.add(marker)
    return marker


def plot(data: dict[str, Any], x: str = "wall_s", width: int = 100, height: int = 28) -> str:
    """Val loss vs training wall time (or FLOPs) per family, first seed, as plain text."""
    import plotext as plt

    out = []
    for family, fam in data["families"].items():
        run = fam["runs"][0]
        plt.clear_figure()
        plt.theme("clear")
        plt.plotsize(width, height)
        used: set[str] = set()
        top = max((p["flops"] for res in run.values() for p in res.get("evals") or []), default=0.0)
        unit, scale = next(
            ((u, f) for u, f in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9)) if top >= f),
            ("MFLOP", 1e6),
        )
        for name, res in run.items():
            pts = res.get("evals") or []
            if not pts:
                continue
            xs = [p[x] / (scale if x == "flops" else 1.0) for p in pts]
            plt.plot(xs, [p["val_loss"] for p in pts], label=name, marker=_marker(name, used))
        if "baseline" in run and run["baseline"].get("evals"):
            plt.hline(run["baseline"]["evals"][-1]["val_loss"])
        what = "training wall time (s)" if x == "wall_s" else f"estimated {unit}s"
        seed = next(iter(run.values()))["seed"] if run else 0
        plt.title(f"{family}: validation loss vs {what}, seed {seed}")
        plt.xlabel("seconds" if x == "wall_s" else unit)
        plt.ylabel("val loss")
        out.append(re.sub(r"\x1b\[[0-9;]*m", "", plt.build()))
    return "\n\n".join(out)
