"""Bytes each rank sends per optimizer step, per stage of a tiny growth plan, under DDP and
FSDP, against the traffic model (growcockpit/plan/comm.py).

MSLT's claim, measured: a frozen block's gradient is never reduced, so gradient traffic
falls by the frozen fraction. Counted on 2 gloo ranks, over one step after a warm-up step:

- DDP: a comm hook sees every gradient bucket the all-reduce gets (then runs the default
  all-reduce), so the payload is exactly the bytes reduced.
- FSDP2: `torch.distributed.all_gather_single` and `reduce_scatter_single` (what FSDP2's
  default collectives call) are wrapped for the step and count the whole tensor each
  handles (the gathered output, the scattered input); any other collective (the gradient
  norm, the loss) is counted as "other".

Bytes sent per rank = payload × the ring factor (2(N − 1)/N for an all-reduce,
(N − 1)/N for an all-gather or a reduce-scatter), as the model says.

    python bench/fsdp_comm.py --quick            # 2 ranks, 4 × 64 Llama, seconds
    python bench/fsdp_comm.py --json out/c.json  # 8 layers × 128
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from fsdp_ranks import STRATEGIES, StageHandle, bench_run, fmt_ratio, ratio, run_ranks  # noqa: E402
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import (  # noqa: E402
    allreduce_hook,
)

from growcockpit.plan.comm import StageTraffic, stage_traffic  # noqa: E402
from growcockpit.plan.footprint import stage_footprints  # noqa: E402
from growcockpit.plan.memory import Strategy, size  # noqa: E402

KINDS = ("all_reduce", "all_gather", "reduce_scatter")
COUNTS: Counter[str] = Counter()
_IN_HOOK: list[bool] = [False]  # the DDP hook's own all-reduce is not "other"


def _bytes(t: torch.Tensor) -> int:
    return int(t.numel() * t.element_size())


def _ddp_hook(state, bucket):  # type: ignore[no-untyped-def]
    """Counts a bucket, then all-reduces it as DDP would (DDP rejects string annotations,
    which `from __future__ import annotations` makes of every annotation here)."""
    COUNTS["all_reduce"] += _bytes(bucket.buffer())
    _IN_HOOK[0] = True
    try:
        return allreduce_hook(None, bucket)  # type: ignore[arg-type]
    finally:
        _IN_HOOK[0] = False


def prepare(strategy: Strategy, handle: StageHandle) -> None:
    if strategy == "ddp":
        handle.module.register_comm_hook(None, _ddp_hook)  # type: ignore[operator]


def _counting(kind: str, fn: Callable[..., Any], which: str, position: int) -> Callable[..., Any]:
    """`fn`, counting the whole tensor it handles: argument `which` (or at `position`)."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        tensor = kwargs[which] if which in kwargs else args[position]
        COUNTS[kind] += _bytes(tensor)
        return fn(*args, **kwargs)

    return wrapped


def _other(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if not _IN_HOOK[0]:
            COUNTS["other"] += _bytes(tensor)
        return fn(tensor, *args, **kwargs)

    return wrapped


def measure(strategy: Strategy, handle: StageHandle) -> dict[str, Any]:
    """The bytes handed to each kind of collective during one step on this rank."""
    saved = {
        name: getattr(dist, name)
        for name in ("all_gather_single", "reduce_scatter_single", "all_reduce")
    }
    dist.all_gather_single = _counting(  # type: ignore[assignment]
        "all_gather", saved["all_gather_single"], "output_tensor", 0
    )
    dist.reduce_scatter_single = _counting(  # type: ignore[assignment]
        "reduce_scatter", saved["reduce_scatter_single"], "input", 1
    )
    dist.all_reduce = _other(saved["all_reduce"])  # type: ignore[assignment]
    COUNTS.clear()
    try:
        handle.step()
    finally:
        for name, fn in saved.items():
            setattr(dist, name, fn)
    return {kind: COUNTS[kind] for kind in (*KINDS, "other")}


def table(rows: list[dict[str, Any]], plan: Any, world: int) -> list[dict[str, Any]]:
    fps = stage_footprints(plan)
    out = []
    for row in sorted(rows, key=lambda r: (r["strategy"], r["stage"], r["rank"])):
        model = stage_traffic(fps[row["stage"]], row["strategy"], world, plan.optim.precision)
        measured = StageTraffic(
            model.index,
            model.name,
            model.strategy,
            world,
            row["all_reduce"],
            row["all_gather"],
            row["reduce_scatter"],
        )
        line = {k: row[k] for k in ("strategy", "stage", "rank")}
        line.update(
            name=model.name,
            other=row["other"],
            sent=measured.sent,
            sent_model=model.sent,
            sent_ratio=ratio(measured.sent, model.sent),
            grads_sent=measured.gradient_sent,
            grads_sent_model=model.gradient_sent,
            grads_ratio=ratio(measured.gradient_sent, model.gradient_sent),
            **{kind: row[kind] for kind in KINDS},
            **{f"{kind}_model": getattr(model, kind) for kind in KINDS},
        )
        out.append(line)
    return out


def print_table(lines: list[dict[str, Any]]) -> None:
    print(
        f"{'strategy':8} {'stage':12} rank {'sent (measured / model)':>30} "
        f"{'grads sent (measured / model)':>32}  other"
    )
    for x in lines:
        print(
            f"{x['strategy']:8} {x['stage'] + 1} {x['name']:10} r{x['rank']}  "
            f"{size(x['sent']):>10} / {size(x['sent_model']):>10} {fmt_ratio(x['sent_ratio']):>6}  "
            f"{size(x['grads_sent']):>10} / {size(x['grads_sent_model']):>10} "
            f"{fmt_ratio(x['grads_ratio']):>6}  {size(x['other'])}"
        )


def frozen_saving(lines: list[dict[str, Any]], plan: Any) -> list[str]:
    """Each stage's measured gradient traffic as a share of the last (all-trained) stage's,
    with the trainable share of its parameters beside it: the claim is that the two agree."""
    fps = stage_footprints(plan)
    out = []
    for strategy in STRATEGIES:
        mine = [x for x in lines if x["strategy"] == strategy and x["rank"] == 0]
        last, last_fp = mine[-1]["grads_sent"], fps[mine[-1]["stage"]]
        for x in mine:
            fp = fps[x["stage"]]
            out.append(
                f"{strategy} stage {x['stage'] + 1} {x['name']}: gradient traffic "
                f"{x['grads_sent'] / last:.3f} × the all-trained stage's; trainable parameters "
                f"{fp.trainable / last_fp.trainable:.3f} × ({fp.trainable_blocks} of "
                f"{fp.layers} blocks)"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    run = bench_run(__doc__ or "", argv)
    rows = run_ranks(measure, run.plan, world=run.ranks, prepare=prepare)
    lines = table(rows, run.plan, run.ranks)
    print(f"bytes sent per rank per step, {run.ranks} ranks, measured / model:")
    print_table(lines)
    print("\n".join(frozen_saving(lines, run.plan)))
    known = [x["sent_ratio"] for x in lines if x["sent_ratio"] is not None]
    print(f"sent ratio range: {min(known):.3f} .. {max(known):.3f}")
    run.write(lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
