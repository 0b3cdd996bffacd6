"""Host syncs in the engine check (bench/gpu/gpu_engine.py), counted with CUDA's sync debug mode.

Each synchronizing call drains the GPU's queue, so a step that makes them leaves the GPU idle
while the host launches the next work. Per stage: how many, how many of them are the stage
change's (a short stage spreads those over every step), and which Python lines made them.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

SYNC_WARNING = "called a synchronizing CUDA operation"


def fold_syncs(row: dict[str, Any] | None, caught: list[warnings.WarningMessage]) -> int:
    """One step's sync warnings into a stage row (its per-step counts and the lines that made
    them); returns how many there were."""
    syncs = [w for w in caught if SYNC_WARNING in str(w.message)]
    if row is not None:
        row.setdefault("step_syncs", []).append(len(syncs))
        if syncs:
            sites: Counter[str] = row.setdefault("sync_sites", Counter())
            sites.update(sync_site(w) for w in syncs)
    return len(syncs)


def steady_and_change(row: dict[str, Any]) -> tuple[float, float]:
    """(median syncs of the stage's later steps, syncs of its first step).

    The stage's first counted step holds its stage change (the operator, a checkpoint, the
    memory release): one-off syncs that the mean over a short stage spreads over every step.
    """
    counts: list[int] = row.get("step_syncs") or []
    if not counts:
        return float("nan"), float("nan")
    later = counts[1:] or counts
    return float(statistics.median(later)), float(counts[0])


def sync_site(w: warnings.WarningMessage) -> str:
    """Where a synchronizing call was made: `folder/file.py:line`."""
    path = Path(w.filename)
    return f"{path.parent.name}/{path.name}:{w.lineno}"


def sync_sites_lines(rows: list[dict[str, Any]], steps: int, top: int = 4) -> list[str]:
    """Per stage, the lines that synchronized most, in calls per step."""
    lines = []
    for row in rows:
        sites: Counter[str] = row.get("sync_sites") or Counter()
        if sites:
            most = ", ".join(f"{site} {n / steps:.2f}" for site, n in sites.most_common(top))
            lines.append(f"  {row['name']:<14} {most}")
    return lines


def count_cell(n: float) -> str:
    return "n/a" if math.isnan(n) else f"{n:.0f}"


def syncs_cell(syncs: float) -> str:
    """Host syncs per step, "n/a" where they were not counted (CPU)."""
    return "n/a" if math.isnan(syncs) else f"{syncs:.2f}"
