"""Plan text and problems reach the screen as written: brackets are text, not Rich markup.

The "cannot launch" toast read `first: : missing; add  with family = …`: Rich markup ate
`[model]` twice. Toasts (every one: `GrowCockpitApp.notify`) and the designer's lines
that show plan text (its title, fields' problems, the stage form's title, the data line)
are literal.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static
from textual.widgets._toast import Toast
from ui_fixtures import PLAN_TOML, screen_text, wait_for

from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import DesignerScreen

MODEL = PLAN_TOML[PLAN_TOML.index("[model]") : PLAN_TOML.index("[optim]")]


def _shown(widget: Static) -> str:
    return str(widget.render())


async def test_the_cannot_launch_toast_keeps_model_in_brackets(tmp_path: Path) -> None:
    plan = tmp_path / "no-model.toml"
    plan.write_text(PLAN_TOML.replace(MODEL, ""))
    app = GrowCockpitApp(plan_path=plan, runs_root=tmp_path, launcher=lambda p, r, o: r)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DesignerScreen))
        await pilot.press("l")
        await wait_for(pilot, lambda: bool(app.screen.query(Toast)))
        (toast,) = app.screen.query(Toast)
        text = " ".join(str(toast.render()).split())  # the toast wraps its text
        assert "first: [model]: missing; add [model] with family" in text, text


async def test_plan_text_with_brackets_shows_whole_in_the_designer(tmp_path: Path) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text(
        PLAN_TOML.replace('name = "shallow"', 'name = "[bold]shallow[/bold]"', 1).replace(
            "[optim]", '[data]\nsource = "[red]missing[/red].txt"\n\n[optim]', 1
        )
    )
    app = GrowCockpitApp(plan_path=plan, runs_root=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DesignerScreen))
        screen = app.screen
        await wait_for(pilot, lambda: bool(_shown(screen.query_one("#data-state", Static))))
        assert _shown(screen.query_one("#sf-title", Static)) == "stage 1: [bold]shallow[/bold]"
        assert "[red]missing[/red].txt" in _shown(screen.query_one("#data-state", Static))
        assert "1  [bold]shallow[/bold]" in screen_text(app)  # the stage table's row
