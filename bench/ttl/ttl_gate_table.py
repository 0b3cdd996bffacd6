"""One row of the depth gate's table from time_to_loss JSON files of one scale.

Does depth pay at this budget? The full-depth baseline and its fixed-depth controls
(`depth-<K>` methods: the final model at K layers, the same budget) ran in one or more
`bench/time_to_loss.py --json` files of the same scale (seeds may be split across files).
Per fixed depth this prints the steps, the tokens seen per non-embedding parameter, the
epochs over the training split, and the final validation losses over the seeds (median,
min–max), then the verdict: depth pays when the medians order full < half < … < 1 layer
and the full–half gap exceeds 3× the seed spread (the widest min–max range of the fixed
models), over ≥ 3 seeds. With fewer seeds the verdict is only a pilot's.

    python bench/ttl/ttl_gate_table.py out/a.json out/b.json --point "4 × 32, batch 32"
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[1]
for _path in (BENCH, BENCH / "ttl"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from common import Size, plan_for  # noqa: E402

from growcockpit.compare.depth_tokens import DepthPoint, tokens_needed  # noqa: E402
from growcockpit.plan import Stage  # noqa: E402
from growcockpit.plan.cost import block_params  # noqa: E402

SEEDS_TO_PASS = 3
GAP_OVER_SPREAD = 3.0


@dataclass(frozen=True)
class DepthRow:
    """One fixed depth over the seeds."""

    layers: int
    steps: int
    tokens_per_param: float
    epochs: float | None
    losses: dict[int, float]  # seed -> final val loss
    flops_ratio: float = 1.0  # its FLOPs / the baseline's (bench count), median over the seeds

    @property
    def median(self) -> float:
        return statistics.median(self.losses.values())

    @property
    def spread(self) -> float:
        return max(self.losses.values()) - min(self.losses.values())


def fixed_depth(method: str, size: Size) -> int | None:
    if method in ("baseline", "baseline-wsd"):
        return size.layers
    if method.startswith("depth-") and method[6:].isdigit():
        return int(method[6:])
    return None


def train_tokens(size: Size) -> int | None:
    """Tokens in the training split at this scale's tokenizer and sequence length (None: the
    backend's data path is unavailable, e.g. torch is not installed)."""
    try:
        from growcockpit.backend.data.blocks import load_blocks
    except ImportError:
        return None
    plan = plan_for(size, "gate-data", [Stage("s", size.layers, 1, enter="init", train="all")])
    blocks = load_blocks(plan.data, size.family, 0)
    return int(blocks.train.shape[0]) * size.seq


def depth_rows(files: list[dict[str, Any]], family: str) -> tuple[Size, list[DepthRow]]:
    sizes = {json.dumps(f["families"][family]["size"], sort_keys=True) for f in files}
    if len(sizes) != 1:
        raise SystemExit(f"ttl_gate_table: the files are of different scales ({len(sizes)} sizes)")
    size = Size(**files[0]["families"][family]["size"])
    tokens = train_tokens(size)
    found: dict[int, tuple[int, dict[int, float]]] = {}
    ratios: dict[int, list[float]] = {}
    for f in files:
        for run in f["families"][family]["runs"]:
            for method, res in run.items():
                layers = fixed_depth(method, size)
                if layers is None or "final_val_loss" not in res:
                    continue
                steps = sum(int(s["steps"]) for s in res["stages"])
                found.setdefault(layers, (steps, {}))[1][int(res["seed"])] = res["final_val_loss"]
                ratios.setdefault(layers, []).append(float(res.get("flops_ratio") or 1.0))
    rows = []
    for layers, (steps, losses) in sorted(found.items(), reverse=True):
        shallow = replace(size, layers=layers)
        model = plan_for(shallow, "gate", [Stage("s", layers, 1, enter="init", train="all")]).model
        params = layers * block_params(model, size.hidden)
        seen = steps * size.batch * size.seq
        epochs = seen / tokens if tokens else None
        ratio = statistics.median(ratios[layers])
        rows.append(DepthRow(layers, steps, seen / params, epochs, losses, ratio))
    return size, rows


def depth_points(files: list[dict[str, Any]], family: str) -> list[DepthPoint]:
    """Every fixed-depth run that ended with a final loss, over files of one scale that may
    differ in budget: the points compare/depth_tokens.py fits."""
    keep = ("steps", "eval_every")
    shapes = {
        json.dumps(
            {k: v for k, v in f["families"][family]["size"].items() if k not in keep},
            sort_keys=True,
        )
        for f in files
    }
    if len(shapes) != 1:
        raise SystemExit(
            f"ttl_gate_table: --fit-with files are of other models ({len(shapes)} shapes)"
        )
    points = []
    for f in files:
        size = Size(**f["families"][family]["size"])
        for run in f["families"][family]["runs"]:
            for method, res in run.items():
                layers = fixed_depth(method, size)
                if layers is None or "final_val_loss" not in res or not res.get("flops"):
                    continue
                steps = (
                    sum(int(s["steps"]) for s in res["stages"]) if "stages" in res else res["steps"]
                )
                tokens = float(steps * size.batch * size.seq)
                points.append(
                    DepthPoint(layers, tokens, float(res["flops"]), res["final_val_loss"])
                )
    return points


def verdict(rows: list[DepthRow]) -> str:
    if len(rows) < 2:
        return "no controls"
    full, half = rows[0], rows[1]
    seeds = min(len(r.losses) for r in rows)
    ordered = all(a.median < b.median for a, b in zip(rows, rows[1:], strict=False))
    gap = half.median - full.median
    spread = max(r.spread for r in rows)
    if not ordered:
        best = min(rows, key=lambda r: r.median)
        return f"fails: a fixed {best.layers}-layer model ends lowest (full–half gap {gap:+.3f})"
    if seeds < SEEDS_TO_PASS:
        return f"ordered on {seeds} seed(s), full–half gap {gap:.3f}: pilot, spread unmeasured"
    ratio = gap / spread if spread else float("inf")
    ok = gap > GAP_OVER_SPREAD * spread
    return (
        f"{'PASSES' if ok else 'fails'}: ordered, full–half gap {gap:.3f} = {ratio:.1f}× "
        f"the seed spread {spread:.3f} (needs > {GAP_OVER_SPREAD:g}×)"
    )


def table(point: str, size: Size, rows: list[DepthRow]) -> str:
    head = (
        f"**{point}** — {size.family} {size.layers} × {size.hidden} ({size.heads} heads), "
        f"vocab {size.vocab}, seq {size.seq}, batch {size.batch}, dropout {size.dropout:g}, "
        f"lr {size.lr:g}, "
        f"budget {size.steps} full-depth steps\n\n"
        "| layers | steps | FLOPs / baseline's | tokens / non-emb param | epochs | seeds | "
        "final val, median (min–max) |\n|---|---|---|---|---|---|---|\n"
    )
    body = "".join(
        f"| {r.layers} | {r.steps} | {r.flops_ratio:.2f} | {r.tokens_per_param:.0f} | "
        f"{'?' if r.epochs is None else f'{r.epochs:.1f}'} | "
        f"{','.join(str(s) for s in sorted(r.losses))} | {r.median:.3f} "
        f"({min(r.losses.values()):.3f}–{max(r.losses.values()):.3f}) |\n"
        for r in rows
    )
    return head + body + f"\nVerdict: {verdict(rows)}\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path, help="time_to_loss --json files, one scale")
    ap.add_argument("--family", default="gpt2")
    ap.add_argument("--point", default="point", help="the row's name")
    ap.add_argument(
        "--fit-with",
        nargs="*",
        type=Path,
        default=[],
        help="JSON files of the same model at other budgets: the tokens-needed fit uses them too",
    )
    args = ap.parse_args(argv)
    try:
        files = [json.loads(p.read_text()) for p in args.files]
        others = [json.loads(p.read_text()) for p in args.fit_with]
    except (OSError, json.JSONDecodeError) as exc:
        print(f"ttl_gate_table: cannot read {exc}", file=sys.stderr)
        return 2
    size, rows = depth_rows(files, args.family)
    text = table(args.point, size, rows)
    if rows and not verdict(rows).startswith("PASSES"):
        points = depth_points(files + others, args.family)
        budget = (
            statistics.median(p.flops for p in points if p.layers == size.layers) if points else 0.0
        )
        text = text.rstrip("\n") + f"; {tokens_needed(points, size.layers, budget)}\n"
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
