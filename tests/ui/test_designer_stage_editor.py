"""The stage editor (`e` on a running run's dashboard) opens without building what it only
shows read-only: the plan's section tabs are built when first shown, then work as ever."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Static
from ui_fixtures import wait_for, write_plan

from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens.designer import DesignerScreen
from growcockpit.ui.widgets.plan_form import SectionForm


async def test_the_section_tabs_of_the_stage_editor_are_built_when_shown(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "p.toml")
    app = GrowCockpitApp(workdir=tmp_path, runs_root=tmp_path / "runs")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        app.push_screen(DesignerScreen(plan, locked_stages=1))
        await wait_for(pilot, lambda: isinstance(app.screen, DesignerScreen))
        screen = app.screen
        assert isinstance(screen, DesignerScreen) and screen.doc.remaining
        await pilot.pause()
        assert not screen.query(SectionForm)  # nothing built that the editor only shows
        assert screen.selected == 1
        await pilot.press("3")
        await wait_for(pilot, lambda: bool(screen.query("#data-source")))
        source = screen.query_one("#data-source", Input)
        assert source.value == "builtin" and source.is_disabled  # the plan's, read-only
        await wait_for(pilot, lambda: bool(str(screen.query_one("#data-state", Static).render())))
        assert not screen.query_one("#tab-data").query(".lazy-sections")  # the placeholder went
        await pilot.press("2")
        await wait_for(pilot, lambda: bool(screen.query("#model-final-layers")))
        assert screen.query_one("#model-final-layers", Input).value == "6"
        assert len(screen.query(SectionForm)) == 4  # data; plan, model, budget
