"""Text from a run directory made safe to print on a terminal.

A run directory may come from someone else: its status.json and events can
hold escape sequences, newlines or bidirectional overrides in any string
(plan and stage names, GPU names) that would redraw or disguise what a
terminal shows. Printed text goes through `terminal_safe`.
"""

from __future__ import annotations


def terminal_safe(text: str) -> str:
    """`text` with every unprintable character (ESC, newline, U+202E …) written as an escape."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
