"""One family's gate verdict in the loan, from its time_to_loss JSON: undecided unless every
requested control finished.

A control cut by its cap (or killed, or crashed) has no final loss. The benchmark's own gate
(bench/ttl/ttl_gate.py `bench_gate`, `needed=` the requested control depths) turns undecided
when one of them did not finish on every seed, so a loan can never read "pays" from depth-4
alone, nor print an unmarked speedup because depth-1 was killed. The full-depth short
schedules the benchmark runs by default (full@0.5, full@0.25, full@plan: the envelope a
growth claim must beat, bench/ttl/ttl_claims.py) are requested controls too: one unfinished
or left out leaves the loan's verdict undecided. A family with no result at all (its command
cut before it wrote one, every baseline unfinished) is undecided as well.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from ttl_gate import bench_gate

DEPTH = re.compile(r"^depth-(\d+)$")
# the full-depth short schedules time_to_loss runs by default (full@plan's share varies)
SHORT = ("full@0.5", "full@0.25")
Word = Literal["pays", "does_not_pay", "undecided"]


@dataclass(frozen=True)
class Verdict:
    word: Word
    why: str  # empty where the gate decided
    best_depth: int | None  # the depth that ends lowest (decided gates only)


def _done(res: dict[str, Any] | None) -> bool:
    return bool(res) and res.get("rc", 0) == 0 and res.get("status") == "completed"  # type: ignore[union-attr]


def family_verdict(
    fam: dict[str, Any] | None, methods: list[str], short_needed: bool = True
) -> Verdict:
    """The gate over the family's seeds, every depth control of `methods` needed, and (with
    `short_needed`, as time_to_loss runs them by default) the full-depth short schedules."""
    if not fam:
        return Verdict("undecided", "no result", None)
    needed = tuple(sorted(int(m.group(1)) for m in map(DEPTH.match, methods) if m))
    runs: list[dict[str, Any]] = fam.get("runs") or []
    if not runs:
        return Verdict("undecided", "the baseline did not finish", None)
    short = sorted(
        {m for r in runs for m in r if m.startswith("full@")} | set(SHORT if short_needed else ())
    )
    unfinished = [m for m in short if not all(_done(r.get(m)) for r in runs)]
    gate = bench_gate(runs, int(fam["size"]["layers"]), needed)
    if gate is None:
        return Verdict("undecided", "no control ran", None)
    if gate.undecided:
        missing = [f"depth-{d}" for d in needed if d not in {c.layers for c in gate.controls}]
        return Verdict("undecided", f"{','.join(missing) or 'a control'} not finished", None)
    if unfinished:  # the envelope growth is claimed against is incomplete
        return Verdict("undecided", f"{','.join(unfinished)} not finished", None)
    return Verdict("pays" if gate.pays else "does_not_pay", "", gate.lowest_layers)
