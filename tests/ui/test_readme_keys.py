"""Every key bound on every screen has its row in the README's keys table.

A user learns the cockpit from that table (and `?`); a key added to a screen's BINDINGS
without a row is a key nobody finds. The table is `| screen | key | does |`; a key cell
names keys in backticks (`g`, `1`-`5`) or by name (Esc, Enter, ctrl+s, Delete, space).
"""

from __future__ import annotations

import re

from repo_paths import REPO
from textual.binding import Binding

from growcockpit.ui.app import GrowCockpitApp
from growcockpit.ui.screens.compare import CompareScreen
from growcockpit.ui.screens.confirm import ConfirmScreen
from growcockpit.ui.screens.dashboard import DashboardScreen
from growcockpit.ui.screens.designer import DesignerScreen
from growcockpit.ui.screens.home import HomeScreen
from growcockpit.ui.screens.launch import LaunchScreen
from growcockpit.ui.screens.prompt import HelpScreen, PromptScreen
from growcockpit.ui.screens.race import RaceScreen

SCREENS: dict[str, type] = {
    "everywhere": GrowCockpitApp,
    "Home": HomeScreen,
    "Designer": DesignerScreen,
    "Launch dialog": LaunchScreen,
    "Dashboard": DashboardScreen,
    "Compare": CompareScreen,
    "Race": RaceScreen,
    "Confirm dialog": ConfirmScreen,
    "Prompt": PromptScreen,
    "Help": HelpScreen,
}
NAMES = {
    "escape": "Esc",
    "enter": "Enter",
    "delete": "Delete",
    "space": "space",
    "question_mark": "?",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "slash": "/",
    "less_than_sign": "<",
    "greater_than_sign": ">",
    "comma": ",",
    "full_stop": ".",
    "minus": "-",
    "plus": "+",
    "equals_sign": "=",
}


def _bound_keys(cls: type) -> set[str]:
    keys: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("growcockpit."):
            continue  # Textual's own (tab, ctrl+q, ctrl+c) are not the cockpit's to document
        for b in vars(klass).get("BINDINGS", []):
            key = b.key if isinstance(b, Binding) else b[0]
            keys |= {NAMES.get(k.strip(), k.strip()) for k in key.split(",")}
    return keys


def _cell_keys(cell: str) -> set[str]:
    keys = set()
    for a, b in re.findall(r"`(\d)`-`(\d)`", cell):
        keys |= {str(i) for i in range(int(a), int(b) + 1)}
    keys |= set(re.findall(r"`([^`]+)`", cell))
    keys |= set(re.findall(r"\b(Esc|Enter|Delete|space|ctrl\+\w)\b", cell))
    return keys


def _readme_table() -> dict[str, set[str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Keys\n", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] in SCREENS:
            table.setdefault(cells[0], set()).update(_cell_keys(cells[1]))
    return table


def test_every_bound_key_has_a_readme_row() -> None:
    table = _readme_table()
    missing = [
        f"{screen}: {key}"
        for screen, cls in SCREENS.items()
        for key in sorted(_bound_keys(cls) - table.get(screen, set()))
    ]
    assert not missing, "keys bound but not in README.md's keys table:\n" + "\n".join(missing)


def test_the_table_names_no_key_a_screen_does_not_have() -> None:
    """A row for a key that was removed or renamed is as misleading as a missing one.

    Keys a widget handles rather than a binding (space in the compare list, Enter in a
    dialog's buttons and inputs, the palette's ctrl+p) are allowed by name.
    """
    by_widget = {"Compare": {"space"}, "Launch dialog": {"Enter"}, "Prompt": {"Enter"}}
    by_widget["everywhere"] = {"ctrl+p"}
    extra = [
        f"{screen}: {key}"
        for screen, keys in _readme_table().items()
        for key in sorted(keys - _bound_keys(SCREENS[screen]) - by_widget.get(screen, set()))
    ]
    assert not extra, "README.md lists keys no binding has:\n" + "\n".join(extra)


def test_the_cell_reader_reads_the_forms_the_table_uses() -> None:
    assert _cell_keys("`1`-`5`") == {"1", "2", "3", "4", "5"}
    assert _cell_keys("`x` / Delete") == {"x", "Delete"}
    assert _cell_keys("Esc, `q`, `?`") == {"Esc", "q", "?"}
    assert _bound_keys(DesignerScreen) >= {"x", "Delete", "[", "]", "ctrl+s", "S", "?", "Esc"}
