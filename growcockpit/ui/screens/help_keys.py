"""The key list of a screen's `?` help, generated from its bindings so it cannot drift.

Every binding the screen answers to is listed: its own class's and its base classes'
(the dashboard's are split over three), and the app's (t cycles the theme on every
screen); Textual's generic ones (focus moves, copy) are left out. A key the screen does
not offer in its current mode (`check_action` False, hidden in the footer too) is left
out. Each key reads with its meaning from `KEY_MEANINGS` where the footer's one word
is too short to say it, else with the binding's own description.
"""

from __future__ import annotations

from rich.columns import Columns
from rich.text import Text
from textual.binding import Binding

from growcockpit.ui.screens.help_texts import KEY_MEANINGS

OWN_PACKAGE = "growcockpit."
SPOKEN = {"escape": "Esc", "enter": "Enter", "delete": "Delete", "slash": "/", "space": "space"}


def own_bindings(cls: type) -> list[Binding]:
    """The bindings growcockpit's classes declare on `cls` and its bases, base first."""
    out: list[Binding] = []
    for klass in reversed(cls.__mro__):
        if not klass.__module__.startswith(OWN_PACKAGE):
            continue
        out += [b for b in klass.__dict__.get("BINDINGS", []) if isinstance(b, Binding)]
    return out


def shown_key(binding: Binding) -> str:
    """How a key reads: its key_display, else its spoken name; "x / Delete" for two."""
    if binding.key_display:
        return binding.key_display
    return " / ".join(SPOKEN.get(k, k) for k in binding.key.split(","))


def meaning(binding: Binding) -> str:
    what = KEY_MEANINGS.get(binding.action)
    if what is not None:
        return what
    if binding.action.startswith("tab("):
        return f"{binding.description} tab"
    return binding.description


def keys_of(screen: object) -> list[tuple[str, str]]:
    """(key, meaning) of every binding `screen` answers to, its own first, the app's last;
    one row per action (a binding overridden in a subclass shows once)."""
    check = getattr(screen, "check_action", None)
    app = getattr(screen, "app", None)
    bindings = own_bindings(type(screen))
    if app is not None:
        bindings += own_bindings(type(app))
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for b in bindings:
        if not b.description or (b.key, b.action) in seen:
            continue
        seen.add((b.key, b.action))
        if check is not None and check(b.action.split("(")[0], ()) is False:
            continue  # not offered in this mode (the footer hides it too)
        out.append((shown_key(b), meaning(b)))
    return out


def key_columns(keys: list[tuple[str, str]]) -> Columns:
    """The keys in as many columns as the width holds, read down each column."""
    width = max((len(k) for k, _ in keys), default=1)
    cells = []
    for key, what in keys:
        cell = Text(key.rjust(width), style="bold")
        cell.append("  " + what)
        cells.append(cell)
    return Columns(cells, padding=(0, 2), column_first=True)
