"""Zoom by range and a cursor, without Textual: the dashboard's `z` shows steps A–B of a
run (finished or not) on every plot, and `,` / `.` move a cursor whose values the plots
give in their lower border.

A range is in steps whatever the x axis: the plots convert it with the run's maps
(`fold/axes.py`), as they convert every step-indexed series. The cursor is a step too;
each plot gives, per curve, the drawn point nearest to it. Drawn points are logged
points (min/max downsampling keeps real points, and a narrow range is not downsampled),
so the value under the cursor is always one the run logged."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence

RANGE_RE = re.compile(r"^\s*(\d+)\s*(?:-|–|\.\.|to|\s)\s*(\d+)\s*$")
CURSOR_MOVES = 40  # a cursor press moves 1/40 of the range (at least one step)


class RangeError(ValueError):
    """A range that cannot be read; its message says what to type."""


def parse_step_range(text: str) -> tuple[int, int] | None:
    """`30-40` (also `30–40`, `30..40`, `30 40`) → (30, 40); empty → None (the whole run)."""
    if not text.strip():
        return None
    found = RANGE_RE.match(text)
    if found is None:
        raise RangeError(f"range {text.strip()!r}: type two steps, as 30-40 (empty: the whole run)")
    lo, hi = int(found.group(1)), int(found.group(2))
    if lo >= hi:
        raise RangeError(f"range {lo}-{hi}: the first step must be below the second")
    return lo, hi


def range_problem(text: str) -> str:
    """Why `text` is no step range, or "" (a prompt's check)."""
    try:
        parse_step_range(text)
    except RangeError as exc:
        return str(exc)
    return ""


def range_text(steps: tuple[int, int] | None) -> str:
    return "" if steps is None else f"{steps[0]}-{steps[1]}"


def move_cursor(cursor: int | None, steps: tuple[int, int], by: int) -> int:
    """The cursor `by` moves on within `steps` (none yet: the range's middle)."""
    lo, hi = steps
    if cursor is None:
        return (lo + hi) // 2
    stride = max(1, (hi - lo) // CURSOR_MOVES)
    return min(hi, max(lo, cursor + by * stride))


def nearest(xs: Sequence[float], ys: Sequence[float], x: float) -> float | None:
    """y of the point of (xs ascending) nearest to `x`; None for no points."""
    if not xs:
        return None
    i = bisect_left(xs, x)
    if i == len(xs) or (i > 0 and x - xs[i - 1] <= xs[i] - x):
        i -= 1
    return ys[i]
