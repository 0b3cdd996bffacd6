"""The memory and traffic part of `growcockpit plan show`, and the designer's one-line verdict."""

from __future__ import annotations

from growcockpit.plan.comm import plan_traffic
from growcockpit.plan.memory import (
    GB,
    MemoryFit,
    Strategy,
    memory_fit,
    plan_memory,
    size,
)
from growcockpit.plan.show import text_table
from growcockpit.plan.types import Plan

_OTHER: dict[str, Strategy] = {"ddp": "fsdp", "fsdp": "ddp"}


def fit_verdict(fit: MemoryFit, gpu_gb: float) -> str:
    """e.g. 'largest stage 2 "late-32" 60.7 GB a rank: fits one 80 GB GPU (FSDP, 8 ranks)'."""
    s = fit.largest
    how = f"{s.strategy.upper()}, {s.ranks} rank{'s' if s.ranks != 1 else ''}"
    word = "fits" if fit.fits else "does NOT fit"
    return (
        f'largest stage {s.index + 1} "{s.name}" {size(s.total)} a rank: '
        f"{word} one {gpu_gb:g} GB GPU ({how})"
    )


def memory_verdict(plan: Plan, ranks: int, gpu_gb: float) -> str:
    """The plan's largest stage against one GPU, as `plan show` says it ('' without stages)."""
    fit = memory_fit(plan_memory(plan, ranks), gpu_gb)
    return fit_verdict(fit, gpu_gb) if fit is not None else ""


def memory_summary(plan: Plan, ranks: int, gpu_gb: float) -> str:
    """The designer's short line ('' without stages), e.g. 'memory: ≤ 60.7 GB a rank
    (stage 2, FSDP × 8): fits 80 GB GPUs'. Under DDP, or on one process, every process holds
    the whole stage whatever the rank count, so none is named: 'memory: ≤ 99.5 MB a process
    (stage 3): fits 80 GB GPUs' (a laptop's CPU plan is not told about 8 GPUs)."""
    fit = memory_fit(plan_memory(plan, ranks), gpu_gb)
    if fit is None:
        return ""
    s = fit.largest
    word = "fits" if fit.fits else "too big for"
    where = (
        f"a rank (stage {s.index + 1}, FSDP × {s.ranks})"
        if s.strategy == "fsdp"
        else f"a process (stage {s.index + 1})"
    )
    return f"memory: ≤ {size(s.total)} {where}: {word} {gpu_gb:g} GB GPUs"


def memory_lines(plan: Plan, ranks: int, gpu_gb: float) -> list[str]:
    """Per stage: each rank's estimated memory and gradient traffic, then the verdict for
    the plan's strategy and, for comparison, the other one."""
    stages = plan_memory(plan, ranks)
    traffic = plan_traffic(plan, ranks)
    fit = memory_fit(stages, gpu_gb)
    if fit is None:
        return []
    strategy = plan.distributed.strategy
    header = [
        "#",
        "stage",
        "params",
        "grads",
        "optim",
        "activ.",
        "working",
        "total",
        "sent",
        "grads sent",
    ]
    rows = [header]
    for s, t in zip(stages, traffic, strict=True):
        rows.append(
            [
                str(s.index + 1),
                s.name,
                *(size(x) for x in (s.params, s.grads, s.optimizer, s.activations, s.working)),
                size(s.total),
                size(t.sent),
                size(t.gradient_sent),
            ]
        )
    other = memory_fit(plan_memory(plan, ranks, _OTHER[strategy]), gpu_gb)
    lines = [
        f"memory per rank ({strategy.upper()} on {ranks} ranks, estimated; "
        f"micro-batch {plan.optim.batch_size} × {plan.data.seq_len} tokens, "
        f"{plan.optim.precision} compute):",
        *text_table(rows, right=set(range(2, len(header)))),
        fit_verdict(fit, gpu_gb),
    ]
    if other is not None:
        lines.append(f"  for comparison: {fit_verdict(other, gpu_gb)}")
    offloaded = max(s.offloaded for s in stages)
    if offloaded:
        lines.append(f"  cpu_offload: {size(offloaded)} a rank of state kept in host memory")
    lines.append(
        "GB = 1e9 bytes; working: DDP buckets / FSDP gathered root and blocks; sent: bytes a "
        "rank sends per step (ring collectives), grads sent: the gradients' part; CUDA context "
        "and fragmentation not counted "
        f"(--ranks N, --gpu-gb G; {_headroom(fit)})"
    )
    return lines


def _headroom(fit: MemoryFit) -> str:
    left = (fit.gpu_bytes - fit.largest.total) / GB
    return f"{left:.1f} GB headroom" if left >= 0 else f"{-left:.1f} GB over"
