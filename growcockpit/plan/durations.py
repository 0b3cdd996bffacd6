"""Composer-style durations where a step count goes: `100ba`, `1e6tok`, `0.8dur`.

A user sizing a race or an override thinks in batches, in tokens, or in a share of the
training; the plan counts optimizer steps. Where an override sets a step-count key
(`stages.0.steps`, `optim.warmup_steps`, `budget.baseline_steps`, any key ending in
`steps`), its value may be

- `Nba`: N batches, i.e. N optimizer steps (one step takes one batch of
  batch_size × grad_accum_steps sequences);
- `Ntok`: N tokens, i.e. N / (batch_size × grad_accum_steps × seq_len) steps, rounded
  to the nearest step and at least one;
- `Fdur`: F (0 < F ≤ 1) of the plan's total steps, as the plan stands without this
  override (its other overrides applied), rounded, at least one.

The conversion uses the plan's own batch and sequence length, so `1e6tok` means the
same data whatever the batch. Stdlib only; errors are one line for the key that used it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

Unit = Literal["ba", "tok", "dur"]
UNITS: dict[str, str] = {"ba": "batches", "tok": "tokens", "dur": "of the total steps"}
_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\s*(ba|tok|dur)\s*$")
FORMS = "a whole number of steps, or a duration such as 100ba, 1e6tok or 0.5dur"


class DurationError(ValueError):
    """A duration that names no whole number of steps: the message says why and what to
    give (the caller names the key and the text)."""


@dataclass(frozen=True)
class Duration:
    amount: float
    unit: Unit


def parse_duration(text: str) -> Duration | None:
    """`100ba` → Duration(100, "ba"); None when `text` is not of the form NUMBER UNIT."""
    m = _DURATION.match(text)
    if m is None:
        return None
    amount = float(m.group(1) + (m.group(2) or ""))
    unit: Unit = m.group(3)  # type: ignore[assignment]  # the regex allows only the three
    return Duration(amount, unit)


def is_step_key(key: str) -> bool:
    """Does the dotted key set a step count (`stages.0.steps`, `optim.warmup_steps`, …)?"""
    return key.rsplit(".", 1)[-1].endswith("steps")


def duration_steps(d: Duration, *, tokens_per_step: int, total_steps: int) -> int:
    """The whole number of optimizer steps `d` stands for in a plan with these sizes."""
    if not math.isfinite(d.amount) or d.amount <= 0:
        raise DurationError(f"give a positive amount of {UNITS[d.unit]}, e.g. 100ba")
    if d.unit == "ba":
        if d.amount != int(d.amount):
            raise DurationError(f"batches are whole; give e.g. {int(d.amount) or 1}ba")
        return int(d.amount)
    if d.unit == "tok":
        steps = d.amount / max(1, tokens_per_step)
        if steps < 0.5:
            raise DurationError(
                f"less than one step ({tokens_per_step} tokens a step: batch × "
                f"accumulation × seq_len); give at least {tokens_per_step}tok"
            )
        return max(1, round(steps))
    if d.amount > 1:
        raise DurationError("a share of the training is at most 1dur; e.g. 0.5dur")
    return max(1, round(d.amount * total_steps))
