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


def quoted(value: object, limit: int = 80) -> str:
    """A string `value` in double quotes, as a plan (TOML) or JSON writes it, cut at `limit`
    characters and terminal-safe: what a message shows of a value the user gave (any
    other value as TOML writes it too: a number bare).

    Why not `{value!r}`: Python's repr puts the text in '…', which is neither how the
    user wrote it in a plan nor how any other message of growcockpit quotes."""
    if not isinstance(value, str):
        return terminal_safe(str(value)[:limit])
    text = value[:limit].replace("\\", "\\\\").replace('"', '\\"')
    return f'"{terminal_safe(text)}"'
