"""One configuration's timings, product beside reference: what the step bench measures
and its report prints (kept apart from both so neither imports the other)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from reference.pairs import Timed


@dataclass
class Row:
    """One configuration's product and reference, eager and (optionally) compiled."""

    label: str
    product: Timed
    reference: Timed
    compiled: tuple[Timed, Timed] | None = None
    product_ops: Counter[str] = field(default_factory=Counter)
    reference_ops: Counter[str] = field(default_factory=Counter)
    count_steps: tuple[int, int] = (1, 1)
    flops: float = 0.0  # model FLOPs of one step (the product's count, plan/flops.py)
    bare: Timed | None = None  # --bare: the product's model math alone (pairs.bare_step)
