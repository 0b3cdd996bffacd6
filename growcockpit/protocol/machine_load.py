"""Is the machine oversubscribed? The rule the backend warns by and the cockpit shows.

A training step on a machine whose run queue is longer than its cores is
slower than it should be, and nothing else says why (the step time just
grows). The 1-minute load average against the core count is what `top` and
nvitop users read; a margin keeps one extra short-lived process (the
cockpit, a shell) from counting.
"""

from __future__ import annotations


def oversubscribed(load_1min: float | None, cores: int) -> bool:
    """More runnable work than the cores can take: load > cores + max(1, cores / 2)."""
    if load_1min is None or cores < 1:
        return False
    return load_1min > cores + max(1.0, cores / 2)


def load_warning(load_1min: float, cores: int) -> str:
    return (
        f"the machine is oversubscribed: load {load_1min:.1f} on {cores} cores; training "
        "runs slower than it should (other processes compete for the CPU) and step times "
        "and wall-clock comparisons measured now are not representative"
    )
