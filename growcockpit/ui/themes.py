"""Cockpit themes are files: `themes/<name>.tcss` holds a palette as TCSS variables.

A theme file declares Textual's theme colours (`$primary: #3d8fd6;` …) and the
cockpit's own (`$gc-trainable`, `$gc-frozen`, …); `cockpit.tcss` holds every
rule and only refers to variables, so switching a theme never reloads rules.
Files named `cockpit.tcss` or starting with `_` are not themes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.theme import Theme

from growcockpit.resources import themes_dir

LAYOUT_FILE = "cockpit.tcss"
THEME_PREFIX = "growcockpit-"
DEFAULT_THEME = "dark"

# the cockpit's own variables, with defaults for themes that leave them out
GC_DEFAULTS: dict[str, str] = {
    "gc-trainable": "#4ebf71",
    "gc-new": "#a6e36a",
    "gc-frozen": "#7a8592",
    "gc-train-line": "#5aa9ff",
    "gc-val-line": "#d77bff",
    "gc-stage": "#35c7d6",
    "gc-grow": "#4ebf71",
    "gc-pause": "#e0566f",
    "gc-lr": "#ffb547",
    "gc-heat-low": "#1c3250",
    "gc-heat-high": "#ffd84d",
}
_THEME_FIELDS = (
    "primary",
    "secondary",
    "warning",
    "error",
    "success",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
)
_DECL = re.compile(r"^\s*\$([A-Za-z0-9_-]+)\s*:\s*([^;]+?)\s*;", re.MULTILINE)
_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)


class ThemeFileError(ValueError):
    """A theme file that cannot be read as a palette; the message names the file."""


@dataclass(frozen=True)
class ThemeFile:
    name: str  # "dark", from the file name
    path: Path

    @property
    def textual_name(self) -> str:
        return THEME_PREFIX + self.name


def theme_files(directory: Path | None = None) -> list[ThemeFile]:
    """Every theme file in `directory` (the shipped themes by default), sorted by name,
    with the default theme first."""
    directory = themes_dir() if directory is None else directory
    found = [
        ThemeFile(p.stem, p)
        for p in sorted(directory.glob("*.tcss"))
        if p.name != LAYOUT_FILE and not p.name.startswith("_")
    ]
    found.sort(key=lambda t: (t.name != DEFAULT_THEME, t.name))
    return found


def parse_palette(text: str) -> dict[str, str]:
    """`$key: value;` declarations of a theme file (comments ignored)."""
    return {m.group(1): m.group(2).strip() for m in _DECL.finditer(_COMMENT.sub("", text))}


def load_theme(file: ThemeFile) -> Theme:
    try:
        palette = parse_palette(file.path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ThemeFileError(f"{file.path}: cannot read ({exc.strerror})") from None
    if "primary" not in palette:
        raise ThemeFileError(
            f"{file.path}: no $primary colour; see themes/dark.tcss for the format"
        )
    dark = palette.pop("dark", "true").lower() not in ("false", "0", "no")
    fields: dict[str, Any] = {k: palette.pop(k) for k in _THEME_FIELDS if k in palette}
    variables = {**GC_DEFAULTS, **palette}
    return Theme(name=file.textual_name, dark=dark, variables=variables, **fields)
