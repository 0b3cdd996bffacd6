"""`c` on the race screen asks first and says what it starts and about how long (it
started a long background job with no confirmation or ETA)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_fixtures import wait_for

from growcockpit.race import build_race
from growcockpit.race.candidates import SPEC_FILE
from growcockpit.race.presence import request_stop
from growcockpit.session.race_view import RACES_DIR, CurvePoint, continue_text, load_race_view
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens.confirm import ConfirmScreen
from growcockpit.ui.screens.race import RaceScreen
from growcockpit.ui.widgets.race_list import RaceList

PLAN = Path(__file__).parents[1] / "race" / "tiny-race.toml"


def _stopped_race(root: Path) -> Path:
    spec = build_race([PLAN], [], [0], root, budget_fraction=0.5)
    (root / SPEC_FILE).write_text(spec.to_json())
    request_stop(root)
    return root


def test_continue_text_from_the_measured_rate(tmp_path: Path) -> None:
    import dataclasses

    view = load_race_view(_stopped_race(tmp_path), curves=False)
    assert "time unknown" in continue_text(view)
    half = view.budget_flops / 2
    first = dataclasses.replace(
        view.candidates[0], flops=half, curve=[CurvePoint(half, 600.0, 3.0)]
    )
    view = dataclasses.replace(view, candidates=[first, *view.candidates[1:]])
    text = continue_text(view)
    assert "about 50% of one full run" in text and "≈ 10 min" in text


async def test_c_asks_before_starting_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[Path] = []
    monkeypatch.setattr(
        "growcockpit.ui.screens.race.continue_race", lambda d: started.append(d) or d / "log"
    )
    (tmp_path / RACES_DIR).mkdir()
    _stopped_race(tmp_path / RACES_DIR / "tiny")
    app = GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        races = app.screen.query_one(RaceList)
        await wait_for(pilot, lambda: len(races.races) == 1)
        races.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RaceScreen))
        screen = app.screen
        await wait_for(pilot, lambda: getattr(screen, "view", None) is not None)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and started == []
        await pilot.press("escape")
        await pilot.pause()
        assert started == []
