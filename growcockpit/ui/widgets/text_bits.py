"""Small text renderers shared by widgets: sparklines, bars, numbers, theme colours."""

from __future__ import annotations

import math
from collections.abc import Iterable

from textual.widget import Widget

from growcockpit.ui.themes import GC_DEFAULTS

SPARKS = "▁▂▃▄▅▆▇█"


def spark(values: Iterable[float | None], width: int = 16, log: bool = False) -> str:
    """A one-line sparkline of the last `width` values (blank for missing ones)."""
    vals = list(values)[-width:]
    nums = [_scale(v, log) for v in vals if v is not None and math.isfinite(v)]
    if not nums:
        return ""
    lo, hi = min(nums), max(nums)
    span = hi - lo
    out = []
    for v in vals:
        if v is None or not math.isfinite(v):
            out.append(" ")
            continue
        x = _scale(v, log)
        i = 0 if span <= 0 else int((x - lo) / span * (len(SPARKS) - 1) + 0.5)
        out.append(SPARKS[max(0, min(len(SPARKS) - 1, i))])
    return "".join(out)


def _scale(v: float, log: bool) -> float:
    return math.log10(max(v, 1e-12)) if log else v


def bar(frac: float | None, width: int = 10) -> str:
    """`██████░░░░` for a fraction in [0, 1]."""
    if frac is None or not math.isfinite(frac):
        return "·" * width
    filled = round(width * max(0.0, min(1.0, frac)))
    return "█" * filled + "░" * (width - filled)


def num(value: float | None, fmt: str = ".3g") -> str:
    return (
        "–"
        if value is None or (isinstance(value, float) and not math.isfinite(value))
        else format(value, fmt)
    )


def human_bytes(n: float | None) -> str:
    if n is None:
        return "–"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def human_count(n: float | None) -> str:
    if n is None:
        return "–"
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.2f}{unit}"
    return f"{n:.0f}"


# Eight hues at one middle luminance: each contrasts at least 3:1 (the least for graphics)
# with every shipped theme's background, surface and panel, light and dark alike. ANSI
# names did not: "white" on the light theme drew a selected run invisibly, its curves
# and its name in the verdict table. The compare and race screens draw runs in them.
RUN_COLOURS = (
    "#1278de",  # blue
    "#c15a10",  # orange
    "#0b8920",  # green
    "#ec1818",  # red
    "#a742f0",  # purple
    "#e2128c",  # pink
    "#0b838e",  # teal
    "#8e780b",  # olive
)


def colour(widget: Widget, name: str) -> str:
    """A theme colour (`gc-trainable`, `primary`, …) as a hex string, with defaults."""
    try:
        value = widget.app.theme_variables.get(name)
    except Exception:  # not mounted yet
        value = None
    return str(value or GC_DEFAULTS.get(name, "#888888"))


def rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")[:6]
    try:
        return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)
    except (ValueError, IndexError):
        return (136, 136, 136)


def blend(a: str, b: str, t: float) -> str:
    """Linear mix of two hex colours (t=0: a, t=1: b)."""
    ra, rb = rgb(a), rgb(b)
    t = max(0.0, min(1.0, t))
    r, g, bl = (round(x + (y - x) * t) for x, y in zip(ra, rb, strict=True))
    return f"#{r:02x}{g:02x}{bl:02x}"
