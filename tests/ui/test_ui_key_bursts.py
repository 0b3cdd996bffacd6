"""Keys at paste speed (tmux send-keys, a paste, a fast typist) reach the
designer in the order typed. `Pilot.press` waits for each key to be handled; `burst`
queues every key at once, as a terminal read of several keys does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import events
from ui_fixtures import wait_for, write_plan

from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import DesignerScreen, LaunchScreen

SIZE = (160, 48)


def burst(app: GrowCockpitApp, *keys: str) -> None:
    """Every key queued before the first is handled."""
    driver = app._driver
    assert driver is not None
    for key in keys:
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(app)
        driver.send_message(event)


async def settled(pilot: Any, rounds: int = 10) -> None:
    for _ in range(rounds):
        await pilot.pause()


async def focus(pilot: Any, widget_id: str) -> Any:
    widget = pilot.app.screen.query_one(f"#{widget_id}")
    widget.focus()
    await pilot.pause()
    return widget


async def test_a_field_passing_through_empty_keeps_every_key(tmp_path: Path) -> None:
    app = GrowCockpitApp(plan_path=write_plan(tmp_path / "p.toml"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DesignerScreen) and screen.doc.plan is not None
        steps = await focus(pilot, "sf-steps")
        assert steps.value == "100"
        burst(app, "end", "backspace", "backspace", "backspace", "1", "2", "0")
        await wait_for(pilot, lambda: screen.doc.plan.stages[0].steps == 120)
        await settled(pilot)
        assert steps.value == "120" and app.focused is steps
        assert "stages[0].steps" not in screen.doc.field_errors
        layers = await focus(pilot, "sf-layers")
        burst(app, "end", "ctrl+u", "3", "x", "backspace")
        await wait_for(pilot, lambda: screen.doc.plan.stages[0].layers == 3)
        await settled(pilot)
        assert layers.value == "3" and app.focused is layers
        name = await focus(pilot, "sf-name")
        burst(app, "end", "ctrl+u", *"warm-up")
        await wait_for(pilot, lambda: screen.doc.plan.stages[0].name == "warm-up")
        await settled(pilot)
        assert name.value == "warm-up"


async def test_a_key_after_esc_goes_where_esc_sent_the_focus(tmp_path: Path) -> None:
    """Typing a name, Esc, `l`: the `l` is Launch, not the end of the stage name."""
    app = GrowCockpitApp(plan_path=write_plan(tmp_path / "p.toml"), launcher=lambda *_: tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DesignerScreen) and screen.doc.plan is not None
        await focus(pilot, "sf-name")
        burst(app, "end", "x", "escape", "l")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "go")
        assert screen.doc.plan.stages[0].name == "shallowx"
        assert screen.query_one("#sf-name").value == "shallowx"  # type: ignore[attr-defined]
