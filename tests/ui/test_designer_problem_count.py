"""The designer counts the problems `plan validate` lists, every one, even two of one key.

cpu-gong's last stage set to 6 layers breaks two rules of `stages[2].layers` (`source =
"bottom"` copies only 2 layers, and the plan must end at final_layers = 4): `plan validate`
listed both, the designer said "⚠ 1 problem" (it kept one problem per key).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ui_fixtures import notes, wait_for

from growcockpit.cli import main
from growcockpit.plan.load import plan_file_problems
from growcockpit.resources import sample_plan
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens.designer import DesignerScreen


async def test_designer_and_plan_validate_count_the_same_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gong.toml"
    shutil.copy(sample_plan("cpu-gong"), path)
    app = GrowCockpitApp(plan_path=path, runs_root=tmp_path / "runs", workdir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DesignerScreen))
        screen = app.screen
        assert isinstance(screen, DesignerScreen)
        await pilot.press("down", "down")
        await wait_for(pilot, lambda: screen.selected == 2)
        screen.query_one("#sf-layers").value = "6"  # type: ignore[attr-defined]
        await wait_for(pilot, lambda: len(screen.doc.problems) == 2)
        line = str(screen.query_one("#plan-problems").render())
        assert line.startswith("⚠ 2 problems: stage 3 (stack-4) layers"), line
        under_field = str(screen.query_one("#sf-layers-err").render())
        assert 'source = "bottom"' in under_field and "final_layers = 4" in under_field
        await pilot.press("ctrl+s")
        await pilot.pause()
        await pilot.press("l")  # refused, with the same count
        await pilot.pause()
        (refusal,) = notes(app, "error")
        assert refusal.startswith("cannot launch: 2 problems; first: stage 3 (stack-4) layers")
        assert any("a draft with 2 problems" in n for n in notes(app))
    _plan, listed = plan_file_problems(path)
    assert len(listed) == 2
    assert main(["plan", "validate", str(path)]) == 2
    printed = [ln for ln in capsys.readouterr().err.splitlines() if "stages[2].layers" in ln]
    assert len(printed) == 2
