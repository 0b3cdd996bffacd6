"""Every key a screen binds is explained in its help text (the `?` overlay's prose).

The overlay also lists the bindings, but only by their footer word ("Rewind"); a
key's meaning (what b rolls back to, what Esc clears first) must be in the text.
The screens are found by walking growcockpit.ui.screens, so a new screen with a
help overlay, or a new key on an old one, is checked without touching this test.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from types import SimpleNamespace
from typing import Any

from textual.binding import Binding
from textual.screen import Screen

import growcockpit.ui.screens as screens_pkg
from growcockpit.ui.screens.prompt import HelpScreen, reflow

SPOKEN = {"escape": "Esc", "enter": "Enter", "delete": "Delete", "slash": "/"}
WORDS = {"a", "I"}  # keys that are also English words: written "(a)" or "a)" in the text


def help_screens() -> dict[type[Screen[Any]], str]:
    """Each screen class that opens a HelpScreen, with its help text."""
    found: dict[type[Screen[Any]], str] = {}
    for info in pkgutil.iter_modules(screens_pkg.__path__):
        module = importlib.import_module(f"{screens_pkg.__name__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if not issubclass(cls, Screen) or "action_help" not in vars(cls):
                continue
            pushed: list[Any] = []
            fake = SimpleNamespace(app=SimpleNamespace(push_screen=pushed.append), BINDINGS=[])
            cls.action_help(fake)  # type: ignore[arg-type]
            (overlay,) = pushed
            assert isinstance(overlay, HelpScreen)
            found[cls] = reflow(overlay._intro)
    return found


def shown_key(binding: Binding) -> str:
    key = binding.key_display or binding.key.split(",")[0]
    return SPOKEN.get(key, key)


def mentioned(text: str, key: str) -> bool:
    if key.isdigit():  # tab keys: "1–6" says them all
        for lo, hi in re.findall(r"(?<!\d)(\d)\s*[–-]\s*(\d)(?!\d)", text):
            if int(lo) <= int(key) <= int(hi):
                return True
    if key in WORDS:
        return re.search(rf"(?<![\w]){re.escape(key)}\)", text) is not None
    flags = re.IGNORECASE if len(key) > 1 else 0
    return re.search(rf"(?<![\w$]){re.escape(key)}(?![\w])", text, flags) is not None


def test_the_screens_are_found() -> None:
    names = {cls.__name__ for cls in help_screens()}
    assert {"HomeScreen", "DesignerScreen", "DashboardScreen", "CompareScreen"} <= names


def test_every_bound_key_is_in_its_help_text() -> None:
    missing: list[str] = []
    for cls, text in help_screens().items():
        for binding in cls.BINDINGS:
            if not isinstance(binding, Binding) or binding.action == "help":
                continue  # `?` is how the text was opened
            if not mentioned(text, shown_key(binding)):
                missing.append(f"{cls.__name__}: {shown_key(binding)} ({binding.description})")
    assert not missing, "keys missing from their help text: " + "; ".join(missing)


def test_the_matcher_can_fail() -> None:
    assert mentioned("b rolls back", "b") and not mentioned("bb rolls", "b")
    assert not mentioned("attach a run", "a") and mentioned("(Enter or a)", "a")
    assert mentioned("tabs 1–6", "5") and not mentioned("tabs 1–4", "5")
    assert mentioned("Esc clears", "Esc") and not mentioned("$escape", "escape")


async def test_the_help_text_is_shown_as_written(tmp_path: Any) -> None:
    """Keys such as `[` and `]` are text in the overlay, never taken for markup."""
    from ui_fixtures import screen_text, settle, write_recorded_run

    from growcockpit.ui import GrowCockpitApp

    app = GrowCockpitApp(run_dir=write_recorded_run(tmp_path / "run"))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = " ".join(screen_text(app).split())
        assert "[ and ]" in text and "Tabs 1–7" in text
