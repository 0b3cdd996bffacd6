"""Save as names the plan after its new file (the form and the title follow), and the
designer editing a live run's remaining stages offers Send, never Launch or Save as."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_fixtures import wait_for

from growcockpit.ui import GrowCockpitApp

SIZE = (160, 48)


async def test_save_as_names_the_plan_after_its_new_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from growcockpit.plan import load_plan
    from growcockpit.resources import sample_plan
    from growcockpit.session.catalog import list_plans
    from growcockpit.ui.screens import DesignerScreen, PromptScreen

    monkeypatch.chdir(tmp_path)
    app = GrowCockpitApp(plan_path=sample_plan("cpu-demo"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("S")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        app.screen.query_one("Input").value = "my demo.toml"  # not a valid name as it stands
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DesignerScreen) and screen.doc.plan is not None
        assert screen.doc.plan.name == "my-demo"
        assert screen.query_one("#plan-name").value == "my-demo"  # the form follows
        assert str(screen.query_one("#plan-title").render()).startswith("my-demo  · ")
        await pilot.press("S")
        await pilot.pause()
        app.screen.query_one("Input").value = "again.toml"
        await pilot.press("enter")
        await pilot.pause()
    assert load_plan(tmp_path / "my demo.toml").name == "my-demo"
    assert load_plan(tmp_path / "again.toml").name == "again"
    names = [p.name for p in list_plans(tmp_path, samples=tmp_path / "no-samples")]
    assert names.count("cpu-demo") == 0 and "again" in names


async def test_edit_remaining_footer_offers_no_launch_or_save_as(tmp_path: Path) -> None:
    from textual.widgets._footer import FooterKey

    from growcockpit.resources import sample_plan
    from growcockpit.ui.screens import DesignerScreen

    def footer() -> list[str]:
        return [k.description for k in app.screen.query(FooterKey)]

    app = GrowCockpitApp(plan_path=sample_plan("cpu-demo"))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: footer())  # the footer fills in after the first frame
        shown = footer()
        assert "Launch" in shown and "Save as" in shown  # the plain designer offers both
        plain = app.screen
        app.push_screen(DesignerScreen(sample_plan("cpu-demo"), locked_stages=1))
        await wait_for(pilot, lambda: app.screen is not plain and footer())
        await pilot.pause()
        shown = footer()
        assert "Launch" not in shown and "Save as" not in shown, shown
        assert "Send" in shown  # ctrl+s sends the remaining stages
        await pilot.press("l", "S")
        await pilot.pause()
        assert isinstance(app.screen, DesignerScreen) and app.screen.doc.remaining
