"""The command line of bench/time_to_loss.py (its options, in one place)."""

from __future__ import annotations

import argparse
from pathlib import Path

from common import METHODS, MSLT_VARIANTS, TTL_SIZES

DESCRIPTION = "Time (and FLOPs) to quality: the baseline against growth plans, at an equal budget."
BUDGET_METHODS = (
    "baseline",
    "mslt-paper",
    "mslt-longshallow-emb",
    "vcycle",
    "gong",
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=DESCRIPTION)
    ap.add_argument(
        "--family",
        choices=("gpt2", "bert", "llama", "both", "all"),
        default="both",
        help="both = gpt2 and bert; all = every family",
    )
    ap.add_argument("--scale", choices=sorted(TTL_SIZES), default="cpu")
    ap.add_argument(
        "--quick", action="store_true", help="= --scale quick (tiny, < 1 min per family)"
    )
    ap.add_argument(
        "--same-steps",
        action="store_true",
        help="every method trains the baseline's step count (not its budget)",
    )
    ap.add_argument(
        "--methods",
        help="comma list. Budget mode (default: " + ",".join(BUDGET_METHODS) + "): baseline, "
        "baseline-<f>x, gong, vcycle, mslt-<variant>, plan:<file or sample plan>. "
        "--same-steps (default: " + ",".join(METHODS) + "): those four, MSLT variants via --mslt",
    )
    ap.add_argument(
        "--no-depth-controls",
        action="store_true",
        help="leave out the fixed-size controls (depth-1 and half depth, run by default in "
        "budget mode) that the depth gate compares the baseline with",
    )
    ap.add_argument(
        "--no-short-controls",
        action="store_true",
        help="leave out the full-depth short-schedule controls (full@0.5, full@0.25 and "
        "full@plan, run by default in budget mode) whose envelope growth must beat",
    )
    ap.add_argument(
        "--metric",
        choices=("val_loss", "accuracy"),
        default="val_loss",
        help="what the growth claims are measured on: val_loss (lower is better) or "
        "accuracy (exact match, higher is better; a task that reports it, e.g. task:hops)",
    )
    ap.add_argument(
        "--target",
        type=float,
        help="the value of --metric to reach (default: each seed's baseline's final value)",
    )
    ap.add_argument(
        "--target-accuracy",
        type=float,
        metavar="A",
        help="= --metric accuracy --target A (e.g. 0.95)",
    )
    ap.add_argument(
        "--mslt",
        default="paper",
        help=f"--same-steps: MSLT variant(s), comma list; of {', '.join(MSLT_VARIANTS)}",
    )
    ap.add_argument("--seeds", default="0", help="comma list of seeds (init and data order)")
    ap.add_argument(
        "--budget", type=int, help="baseline steps of the budget (default: the scale's)"
    )
    ap.add_argument("--steps", type=int, help="= --budget (the baseline's steps)")
    ap.add_argument("--lr", type=float, help="peak LR (default: the scale's, per family)")
    ap.add_argument(
        "--lrs",
        help="comma list of peak LRs: every method at each, compared at its best (ttl_sweep.py)",
    )
    ap.add_argument(
        "--baseline-schedules",
        default="linear",
        help="comma list of linear, wsd: the baseline trains with each (at every --lrs LR) "
        "and the best by median final val loss is the target (default: linear)",
    )
    ap.add_argument("--layers", type=int, help="final depth (default: the scale's)")
    ap.add_argument("--hidden", type=int, help="width (default: the scale's)")
    ap.add_argument("--heads", type=int, help="attention heads (default: the scale's)")
    ap.add_argument("--batch", type=int, help="batch size in sequences (default: the scale's)")
    ap.add_argument("--vocab", type=int, help="trained tokenizer's vocab (default: the scale's)")
    ap.add_argument(
        "--eval-batches", type=int, help="validation batches per evaluation (default: the scale's)"
    )
    ap.add_argument("--dropout", type=float, help="dropout (default: the scale's; 0 allowed)")
    ap.add_argument(
        "--corpus", type=Path, help="a .txt or .txt.xz to train on (bench/ttl/corpus.py builds one)"
    )
    ap.add_argument("--evals", type=int, help="evaluations of the baseline (about; 40 / 20)")
    ap.add_argument("--device", help="passed to growcockpit train (default: cuda if available)")
    ap.add_argument("--threads", type=int, help="OMP_NUM_THREADS for the runs")
    ap.add_argument("--parallel", type=int, default=1, help="runs at a time (default 1)")
    ap.add_argument("--runs-dir", type=Path, help="keep (and reuse) the runs here (default: temp)")
    ap.add_argument(
        "--reuse-only",
        action="store_true",
        help="train nothing: report the finished runs in --runs-dir, leave the rest out",
    )
    ap.add_argument("--timeout-s", type=float, default=3600.0, help="per run")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--plot", action="store_true", help="print loss vs time and vs FLOPs plots")
    ap.add_argument("--plot-x", choices=("wall_s", "flops", "both"), default="both")
    ap.add_argument("--replot", type=Path, metavar="JSON", help="only plot a previous --json")
    ap.add_argument(
        "--markdown", action="store_true", help="with --replot: Markdown tables instead"
    )
    return ap.parse_args(argv)
