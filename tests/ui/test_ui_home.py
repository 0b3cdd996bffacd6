"""Home (plans and runs), compare, themes (switch, remember) and the command palette."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ui_fixtures import (
    T0,
    notes,
    screen_text,
    write_plan,
    write_recorded_run,
)

from growcockpit.protocol import RunPaths, RunStatus, write_status
from growcockpit.session.catalog import format_age, list_plans, list_runs
from growcockpit.session.settings import load_settings, settings_path
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import CompareScreen, DashboardScreen, DesignerScreen, HomeScreen
from growcockpit.ui.themes import load_theme, parse_palette, theme_files

SIZE = (160, 48)


def make_runs(root: Path) -> tuple[Path, Path]:
    done = write_recorded_run(root / "mslt-done")
    live = write_recorded_run(root / "mslt-live", finished=False, upto_step=30)
    write_status(
        RunPaths(live).status,
        RunStatus(
            run_id="mslt-live",
            plan_name="mslt-demo",
            state="running",
            stage=0,
            stage_name="shallow",
            num_stages=2,
            step=30,
            total_steps=80,
            loss=4.2,
            pid=os.getpid(),
        ),
    )
    return done, live


def test_catalog_lists_plans_and_runs(tmp_path: Path) -> None:
    write_plan(tmp_path / "mine.toml")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    plans = list_plans(tmp_path)
    assert plans[0].name == "mslt-snapshot" and plans[0].origin == "yours" and plans[0].stages == 4
    assert "cpu-demo" in [p.name for p in plans if p.origin == "sample"]
    assert all(p.path.name != "pyproject.toml" for p in plans)
    done, live = make_runs(tmp_path / "runs")
    runs = list_runs(tmp_path / "runs")
    assert [r.name for r in runs] == ["mslt-live", "mslt-done"]  # live first
    assert (runs[0].status, runs[0].stage, runs[0].step, runs[0].loss) == (
        "live",
        "1/2 shallow",
        30,
        4.2,
    )
    assert (runs[1].status, runs[1].plan, runs[1].step, runs[1].total_steps) == (
        "completed",
        "mslt-demo",
        80,
        80,
    )
    assert format_age(30) == "30s" and format_age(7200) == "2h" and format_age(3 * 86400) == "3d"


async def test_home_lists_and_opens(tmp_path: Path) -> None:
    write_plan(tmp_path / "mine.toml")
    done, live = make_runs(tmp_path / "runs")
    app = GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path, clock=lambda: T0 + 3600)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        text = screen_text(app)
        assert "mslt-snapshot" in text and "cpu-demo" in text
        assert "mslt-live" in text and "live" in text and "completed" in text
        await pilot.press("enter")  # the first plan (yours)
        await pilot.pause()
        assert (
            isinstance(app.screen, DesignerScreen)
            and app.screen.doc.plan_path == tmp_path / "mine.toml"
        )
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        await pilot.press("a")  # attach to the highlighted (first, live) run
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen) and app.screen.run_dir == live
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("tab", "down", "enter")  # the runs table, second run
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen) and app.screen.run_dir == done
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, DesignerScreen) and app.screen.doc.plan_path is None
        await pilot.press("escape")  # unsaved new plan: asks first
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, CompareScreen)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_empty_home_says_what_to_do(tmp_path: Path) -> None:
    app = GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "no runs yet" in screen_text(app)
        await pilot.press("a")
        await pilot.pause()
        assert any("No runs yet" in m for m in notes(app))


# ---- themes, settings, command palette -------------------------------------------


def test_theme_files_parse() -> None:
    names = [t.name for t in theme_files()]
    assert names[0] == "dark" and {"light", "high-contrast"} <= set(names)
    for file in theme_files():
        theme = load_theme(file)
        assert theme.primary and theme.variables["gc-trainable"].startswith("#")
    assert parse_palette("/* $x: no; */\n$primary: #fff;\n") == {"primary": "#fff"}


async def test_theme_key_cycles_and_is_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    app = GrowCockpitApp(runs_root=tmp_path, workdir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.theme == "growcockpit-dark"
        await pilot.press("t")
        await pilot.pause()
        assert app.theme == "growcockpit-high-contrast"
    assert settings_path() == tmp_path / "xdg" / "growcockpit" / "settings.json"
    assert load_settings() == {"theme": "high-contrast"}
    again = GrowCockpitApp(runs_root=tmp_path, workdir=tmp_path)
    assert again.theme == "growcockpit-high-contrast"
    explicit = GrowCockpitApp(runs_root=tmp_path, theme="light")
    assert explicit.theme == "growcockpit-light"
    with pytest.raises(ValueError, match="unknown theme"):
        GrowCockpitApp(theme="neon")
    (tmp_path / "xdg" / "growcockpit" / "settings.json").write_text("{broken")
    assert load_settings() == {}
    assert json.loads('{"theme": "dark"}')["theme"] == "dark"


async def test_command_palette_lists_every_action(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the theme picked below is remembered: in this test's settings, not the session's
    # (a later snapshot would open in high-contrast)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    app = GrowCockpitApp(run_dir=write_recorded_run(tmp_path / "run"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in (
            "Pause",
            "Advance",
            "Ckpt",
            "Stop",
            "Edit",
            "LR",
            "Raw/smoothed",
            "Leave",
            "Help",
            "Theme: dark",
            "Theme: light",
            "Theme: high-contrast",
            "Home",
            "New plan",
            "Compare runs",
            "Quit",
        ):
            assert title in titles, title
        assert (
            "Theme" not in titles
        )  # Textual's picker would offer themes without the cockpit's colours
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"high-contrast")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        assert app.theme == "growcockpit-high-contrast"
