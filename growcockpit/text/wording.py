"""Counts in words: "1 stage", "2 stages" (a user read "1 stages" and "1 layers")."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n noun`, the noun plural unless n is 1 (`plural` when adding "s" is wrong)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def speed_word(speedup: float) -> str:
    """A ratio of baseline to plan compute as a reader says it: "1.25× faster", "1.14× slower"
    (never "0.88× faster"), and "as fast" for a ratio that rounds to 1.00 either way
    (an equal-cost plan read "1.00× faster")."""
    if f"{speedup:.2f}" == "1.00" or f"{1 / speedup:.2f}" == "1.00":
        return "as fast"
    if speedup >= 1:
        return f"{speedup:.2f}× faster"
    return f"{1 / speedup:.2f}× slower"
