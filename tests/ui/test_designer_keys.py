"""The designer's keys go where the user is: stage keys to the stage table, letters to a field.

A user pressed `3` (Data), Tab, `x`: stage 1 was removed with no stage table on screen,
because the first Tab stopped on the tab's scroll pane and `x` went on to the screen's
"remove the stage". Typing a path there instead opened Launch at its `l`.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Select, TabbedContent, Tabs
from ui_fixtures import wait_for, write_plan

from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import LaunchScreen
from growcockpit.ui.screens.designer import DesignerScreen
from growcockpit.ui.widgets import StageTable

SIZE = (160, 48)


def _app(tmp_path: Path) -> GrowCockpitApp:
    return GrowCockpitApp(plan_path=write_plan(tmp_path / "p.toml"), workdir=tmp_path)


async def _designer(pilot) -> DesignerScreen:  # type: ignore[no-untyped-def]
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, DesignerScreen))
    screen = pilot.app.screen
    assert isinstance(screen, DesignerScreen)
    return screen


def _stage_names(screen: DesignerScreen) -> list[str]:
    assert screen.doc.plan is not None
    return [s.name for s in screen.doc.plan.stages]


async def test_the_first_tab_on_a_tab_lands_in_its_first_field(tmp_path: Path) -> None:
    async with _app(tmp_path).run_test(size=SIZE) as pilot:
        screen = await _designer(pilot)
        for key, first in (("2", "plan-name"), ("3", "data-source"), ("4", "optim-name")):
            await pilot.press(key)
            await pilot.pause(0.1)
            assert isinstance(screen.focused, Tabs)
            await pilot.press("tab")
            await pilot.pause(0.1)
            assert screen.focused is not None and screen.focused.id == first, (key, screen.focused)
            await pilot.press("escape")  # out of the field: the digits pick tabs again
            await pilot.pause(0.1)


async def test_stage_keys_do_nothing_on_a_tab_without_the_stage_table(tmp_path: Path) -> None:
    async with _app(tmp_path).run_test(size=SIZE) as pilot:
        screen = await _designer(pilot)
        before = _stage_names(screen)
        for tab_key in ("2", "3", "4"):
            await pilot.press(tab_key)
            await pilot.pause(0.1)
            for key in ("x", "delete", "a", "d", "left_square_bracket", "right_square_bracket"):
                await pilot.press(key)
                await pilot.pause(0.05)
            assert _stage_names(screen) == before, tab_key
            assert not screen.doc.dirty
        await pilot.press("1")  # back on the table, the same keys act again
        await pilot.pause(0.1)
        assert isinstance(screen.focused, StageTable)
        await pilot.press("x")
        await pilot.pause(0.1)
        assert _stage_names(screen) == before[1:]


async def test_a_field_keeps_every_letter_typed_into_it(tmp_path: Path) -> None:
    """The path of the report, plus every printable key the designer or the app binds."""
    app = _app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _designer(pilot)
        before = _stage_names(screen)
        theme = app.theme
        await pilot.press("3", "tab")
        await pilot.pause(0.1)
        field = screen.focused
        assert isinstance(field, Input) and field.id == "data-source"
        field.value = ""
        text = "../byo/own.jsnl adx[]S?t1234"
        for ch in text:
            await pilot.press(ch)
            await pilot.pause(0.02)
        await pilot.pause(0.1)
        assert field.value == text
        assert screen.focused is field and app.screen is screen
        assert not any(isinstance(s, LaunchScreen) for s in app.screen_stack)
        assert _stage_names(screen) == before and app.theme == theme
        assert screen.query_one(TabbedContent).active == "tab-data"


async def test_a_stage_field_keeps_the_stage_keys(tmp_path: Path) -> None:
    """On the Stages tab, a stage form's field (a choice list too) is not the stage table:
    `x` there removes no stage."""
    async with _app(tmp_path).run_test(size=SIZE) as pilot:
        screen = await _designer(pilot)
        before = _stage_names(screen)
        select = screen.query_one("#sf-advance", Select)
        select.focus()
        await pilot.pause(0.1)
        for key in ("x", "a", "d", "right_square_bracket"):
            await pilot.press(key)
            await pilot.pause(0.05)
        assert _stage_names(screen) == before
        name = screen.query_one("#sf-name", Input)
        name.focus()
        await pilot.pause(0.1)
        await pilot.press("end", "x", "a")
        await pilot.pause(0.1)
        assert name.value == before[0] + "xa"
        assert len(_stage_names(screen)) == len(before)
