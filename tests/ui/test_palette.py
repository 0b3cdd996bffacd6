"""The command palette (ctrl+p) lists each action once: Home listed its `c` Compare beside
the app's "Compare runs", and "New plan" (and Textual's "Quit" beside Home's) twice."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from textual.screen import Screen
from ui_fixtures import settle, wait_for, write_recorded_run

from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import CompareScreen, DashboardScreen, HomeScreen

SAME_ACTION = ({"compare", "compare runs"}, {"new plan"}, {"quit"}, {"home"})


def _titles(app: GrowCockpitApp, screen: Screen[object]) -> list[str]:
    return [c.title.casefold() for c in app.get_system_commands(screen)]


def _each_once(titles: list[str]) -> None:
    twice = [t for t, n in Counter(titles).items() if n > 1]
    assert not twice, twice
    for group in SAME_ACTION:
        assert len([t for t in titles if t in group]) <= 1, (group, titles)


async def test_home_lists_each_action_once(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    write_recorded_run(runs / "r")
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path, samples=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen))
        titles = _titles(app, app.screen)
        _each_once(titles)
        assert "compare" in titles and "new plan" in titles and "quit" in titles


async def test_the_dashboard_and_compare_list_each_action_once(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "runs" / "r")
    app = GrowCockpitApp(run_dir=run_dir, runs_root=tmp_path / "runs", workdir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await settle(pilot)
        assert isinstance(screen, DashboardScreen)
        titles = _titles(app, screen)
        _each_once(titles)
        assert {"compare runs", "new plan", "home"} <= set(titles)  # the app's, once each
        app.push_screen(CompareScreen(tmp_path / "runs", [run_dir]))
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        compare = app.screen
        assert isinstance(compare, CompareScreen)
        await wait_for(pilot, lambda: compare.is_mounted and len(compare.comparison.runs) == 1)
        _each_once(_titles(app, compare))
