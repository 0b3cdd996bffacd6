"""The `?` help lists every key the screen answers to.

The list was one binding a row under the whole help text: the dashboard's help showed
9 of its 31 keys, the rest below the fold. It is now generated from the bindings of the
screen's class, its bases and the app (help_keys.py), in columns, above the text; these
tests open the help on the real screens and look for every key on screen.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Any

import pytest
from textual.binding import Binding
from ui_fixtures import screen_text, settle, wait_for, write_plan, write_recorded_run

import growcockpit.ui.screens as screens_pkg
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens.dashboard import DashboardScreen
from growcockpit.ui.screens.designer import DesignerScreen
from growcockpit.ui.screens.help_keys import meaning, own_bindings, shown_key
from growcockpit.ui.screens.help_texts import KEY_MEANINGS
from growcockpit.ui.screens.prompt import HelpScreen


def _every_key(screen: Any) -> list[tuple[str, str]]:
    """What the help must show: each described binding of the screen and the app."""
    bindings = own_bindings(type(screen)) + own_bindings(type(screen.app))
    return [
        (shown_key(b), meaning(b))
        for b in bindings
        if b.description and screen.check_action(b.action.split("(")[0], ()) is not False
    ]


def _rows_on_screen(app: GrowCockpitApp) -> str:
    return "\n".join(" ".join(line.split()) for line in screen_text(app).splitlines())


async def _open_help(pilot: Any, app: GrowCockpitApp) -> list[tuple[str, str]]:
    await pilot.pause()
    owner = app.screen
    expected = _every_key(owner)
    await pilot.press("question_mark")
    await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
    await pilot.pause(0.2)
    return expected


def _missing(app: GrowCockpitApp, expected: list[tuple[str, str]]) -> list[tuple[str, str]]:
    text = _rows_on_screen(app)
    return [(k, m) for k, m in expected if f"{k} {' '.join(m.split())}" not in text]


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
async def test_the_dashboard_help_shows_every_key(tmp_path: Path, size: tuple[int, int]) -> None:
    app = GrowCockpitApp(run_dir=write_recorded_run(tmp_path / "run"), workdir=tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, DashboardScreen)
        expected = await _open_help(pilot, app)
        assert len(expected) >= 30  # 31 bindings with a description, and the app's t
        assert not _missing(app, expected), _missing(app, expected)


async def test_home_and_designer_help_show_every_key(tmp_path: Path) -> None:
    write_plan(tmp_path / "mine.toml")
    app = GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path, samples=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        expected = await _open_help(pilot, app)
        assert not _missing(app, expected), _missing(app, expected)
        await pilot.press("escape")
        await pilot.pause()
        app.push_screen(DesignerScreen(tmp_path / "mine.toml"))
        await wait_for(pilot, lambda: isinstance(app.screen, DesignerScreen))
        expected = await _open_help(pilot, app)
        assert ("1", "Stages tab") in expected and ("l", "launch the plan") in expected
        assert not _missing(app, expected), _missing(app, expected)


def _bound_actions() -> set[str]:
    actions = {b.action for b in own_bindings(GrowCockpitApp)}
    for info in pkgutil.iter_modules(screens_pkg.__path__):
        module = importlib.import_module(f"{screens_pkg.__name__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            actions |= {
                b.action for b in cls.__dict__.get("BINDINGS", []) if isinstance(b, Binding)
            }
    return actions


def test_every_meaning_names_a_bound_action_and_fits_a_column() -> None:
    stale = set(KEY_MEANINGS) - _bound_actions()
    assert not stale, f"meanings of actions no screen binds: {sorted(stale)}"
    long = {a: m for a, m in KEY_MEANINGS.items() if len(m) > 30}
    assert not long, long
