"""The per-rank memory estimate (growcockpit/plan/memory.py) against what each rank holds.

For every stage of a tiny Llama growth plan (bench/fsdp_ranks.py: half depth, the top half
stacked on and trained alone, then everything), under DDP and FSDP on 2 gloo ranks: after
a warm-up step and a forward/backward, each rank's local parameters, gradients and
optimizer moments (numel × element size of the local shard: `DTensor.to_local()` under
FSDP) against the estimate's parameters, gradients and optimizer, and the ratio
measured / estimated; under DDP also the activations: the bytes autograd saves for the
backward (`saved_tensors_hooks`, each storage once, weights left out) against the
estimate's activations (fp32 on CPU). On GPUs (one per rank, NCCL) it adds the peak allocated memory of
the step against the estimate's device total.

    python bench/fsdp_memory.py --quick            # 2 ranks, 4 × 64 Llama, seconds
    python bench/fsdp_memory.py --json out/m.json  # 8 layers × 128
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from fsdp_ranks import STRATEGIES, StageHandle, bench_run, fmt_ratio, ratio, run_ranks  # noqa: E402
from torch.distributed.tensor import DTensor  # noqa: E402

from growcockpit.plan.footprint import stage_footprints  # noqa: E402
from growcockpit.plan.memory import Strategy, size, stage_memory  # noqa: E402

MOMENTS = ("exp_avg", "exp_avg_sq")


def _local_bytes(t: torch.Tensor | None) -> int:
    if t is None:
        return 0
    local = t.to_local() if isinstance(t, DTensor) else t
    return int(local.numel() * local.element_size())


def held(handle: StageHandle) -> dict[str, int]:
    """This rank's parameter, gradient and optimizer-moment bytes right now."""
    params = list(handle.model.parameters())
    state = handle.optimizer.state.values()
    return {
        "params": sum(_local_bytes(p) for p in params),
        "grads": sum(_local_bytes(p.grad) for p in params if p.requires_grad),
        "optimizer": sum(_local_bytes(s.get(k)) for s in state for k in MOMENTS),
    }


def saved_activations(handle: StageHandle) -> int:
    """Bytes autograd keeps for the backward of one forward (each storage once, weights
    left out): DDP only, where the weights' storages stay put (FSDP swaps them)."""
    weights = {p.untyped_storage().data_ptr() for p in handle.model.parameters()}
    kept: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights:
            kept[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = handle.module(handle.batch.input_ids, handle.batch.labels)
    loss.backward()
    return sum(kept.values())


def measure(strategy: Strategy, handle: StageHandle) -> dict[str, Any]:
    cuda = handle.batch.input_ids.is_cuda
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    if strategy == "ddp":
        activations = saved_activations(handle)
    else:
        handle.forward_backward()
        activations = None
    row: dict[str, Any] = held(handle)
    row["activations"] = activations
    handle.update()
    if cuda:
        row["peak"] = int(torch.cuda.max_memory_allocated())
    return row


def table(rows: list[dict[str, Any]], plan: Any, world: int) -> list[dict[str, Any]]:
    """One line per strategy, stage and rank: measured, estimated, ratio."""
    fps = stage_footprints(plan)
    out = []
    for row in sorted(rows, key=lambda r: (r["strategy"], r["stage"], r["rank"])):
        est = stage_memory(fps[row["stage"]], row["strategy"], world, plan.optim.precision)
        line = {k: row[k] for k in ("strategy", "stage", "rank")}
        line["name"] = fps[row["stage"]].name
        for key, model in (
            ("params", est.params),
            ("grads", est.grads),
            ("optimizer", est.optimizer),
        ):
            line[key] = row[key]
            line[f"{key}_estimate"] = model
            line[f"{key}_ratio"] = ratio(row[key], model)
        if row["activations"] is not None:
            line["activations"] = row["activations"]
            line["activations_estimate"] = est.activations
            line["activations_ratio"] = ratio(row["activations"], est.activations)
        if "peak" in row:
            line["peak"] = row["peak"]
            line["peak_estimate"] = est.total
            line["peak_ratio"] = ratio(row["peak"], est.total)
        out.append(line)
    return out


def print_table(lines: list[dict[str, Any]]) -> None:
    cols = ("params", "grads", "optimizer")
    head = f"{'strategy':8} {'stage':12} rank " + " ".join(f"{c:>26}" for c in cols)
    print(head + ("  peak (measured/estimate)" if any("peak" in x for x in lines) else ""))
    for x in lines:
        cells = " ".join(
            f"{size(x[c]):>9} / {size(x[c + '_estimate']):>9} {fmt_ratio(x[c + '_ratio']):>5}"
            for c in cols
        )
        peak = (
            f"  {size(x['peak'])} / {size(x['peak_estimate'])} {fmt_ratio(x['peak_ratio'])}"
            if "peak" in x
            else ""
        )
        print(f"{x['strategy']:8} {x['stage'] + 1} {x['name']:10} r{x['rank']}   {cells}{peak}")


def main(argv: list[str] | None = None) -> int:
    run = bench_run(__doc__ or "", argv)
    rows = run_ranks(measure, run.plan, world=run.ranks)
    lines = table(rows, run.plan, run.ranks)
    print(f"measured / estimated bytes per rank, {run.ranks} ranks ({', '.join(STRATEGIES)}):")
    print_table(lines)
    ratios = [x[f"{c}_ratio"] for x in lines for c in ("params", "grads", "optimizer")]
    known = [r for r in ratios if r is not None]
    print(f"state ratio range: {min(known):.3f} .. {max(known):.3f}")
    for x in lines:
        if "activations" in x and x["rank"] == 0:
            print(
                f"activations, stage {x['stage'] + 1} {x['name']}: saved "
                f"{size(x['activations'])} / estimated {size(x['activations_estimate'])} = "
                f"{fmt_ratio(x['activations_ratio'])}"
            )
    run.write(lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
