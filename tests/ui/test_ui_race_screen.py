"""The race screen over a real tiny CPU race: Home lists it, Enter opens it, the table
and curves show the cut candidate greyed and the winner starred, `c` continues the
winner in the background, `s` (confirmed) stops the race, `c` goes on again.

The race (a BERT grown 2 → 4 layers against its full-depth baseline, picking at 1 % of
the budget) is run once for the module with --no-finish, so the winner's continuation
(a thousand steps) is what the screen starts, and stops, itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.text import Text
from ui_fixtures import notes, screen_text, wait_for

from growcockpit.protocol import read_all
from growcockpit.protocol.events import RunStarted
from growcockpit.protocol.rundir import RunPaths
from growcockpit.race.presence import race_live, request_stop
from growcockpit.race.trust import caveat
from growcockpit.session.race_view import RACES_DIR, load_race_view
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens.confirm import ConfirmScreen
from growcockpit.ui.screens.home import HomeScreen
from growcockpit.ui.screens.race import RaceScreen
from growcockpit.ui.widgets.race_list import RaceList

PLAN = Path(__file__).with_name("race-screen.toml")
SIZE = (150, 50)
LIVE_S = 240.0  # a loaded machine: torch imports and a run's start take a while


@pytest.fixture(scope="module")
def race_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("race-screen")
    race = root / RACES_DIR / "tiny"
    log = root / "race.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "growcockpit", "race", str(PLAN), "--budget-fraction", "0.01",
             "--no-finish", "--no-depth-controls", "--no-short-controls", "--race-dir", str(race)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            rc = proc.wait(timeout=1500)  # a heavily loaded machine: minutes
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the race and the run it trains
            proc.wait()
            raise
    assert rc == 0, log.read_text()
    yield race
    request_stop(race)  # a test that failed half-way leaves no race behind
    deadline = time.monotonic() + 120
    while race_live(race) and time.monotonic() < deadline:
        time.sleep(0.5)


def _starts(run: Path) -> list[RunStarted]:
    return [e for e in read_all(RunPaths(run).events) if isinstance(e, RunStarted)]


@pytest.mark.slow
async def test_race_screen_shows_the_race_and_steers_it(race_dir: Path) -> None:
    view = load_race_view(race_dir)
    assert view.status == "picked" and view.winner is not None
    (cut,) = [c for c in view.candidates if c.is_cut]
    (win,) = [c for c in view.candidates if c.key == view.winner]
    winner_run = win.runs[0]
    assert len(_starts(winner_run)) == 1

    app = GrowCockpitApp(runs_root=race_dir.parent.parent / "runs", workdir=race_dir.parent)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen))
        races = app.screen.query_one(RaceList)
        await wait_for(pilot, lambda: [r.path.name for r in races.races] == ["tiny"])
        text = screen_text(app)
        assert "tiny" in text and "picked" in text and view.winner[:20] in text
        races.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RaceScreen), timeout=10)
        screen = app.screen
        assert isinstance(screen, RaceScreen)
        await wait_for(pilot, lambda: screen.view is not None, timeout=30)

        table = screen.query_one("#race-table")
        rows = {str(k.value): table.get_row(k) for k in table.rows}  # type: ignore[attr-defined]
        assert set(rows) == {cut.key, win.key}
        name_cut, name_win = rows[cut.key][0], rows[win.key][0]
        assert isinstance(name_cut, Text) and "dim" in str(name_cut.style)  # greyed
        assert isinstance(name_win, Text) and name_win.plain.startswith("★ ")  # the leader
        assert "cut at rung 1" in rows[cut.key][-1].plain
        text = screen_text(app)
        assert "picked" in text and "val loss vs estimated FLOPs" in text
        assert "val loss vs training time" in text
        assert ("caveat: --budget-fraction 0.01" in text) == (caveat(0.01) is not None)

        await pilot.press("s")  # nobody is in the race: nothing to stop
        await wait_for(pilot, lambda: any("Nothing to stop" in m for m in notes(app)))

        await pilot.press("c")  # continue the winner, in the background: asked first
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: any("goes on in the background" in m for m in notes(app)))
        await wait_for(pilot, lambda: screen.view is not None and screen.view.status == "live",
                       timeout=LIVE_S)  # fmt: skip
        await wait_for(pilot, lambda: len(_starts(winner_run)) == 2, timeout=LIVE_S)
        assert _starts(winner_run)[-1].resumed_from is not None  # from its rung's checkpoint

        await pilot.press("c")  # it is running: nothing more to continue
        await wait_for(pilot, lambda: any("Nothing to continue" in m for m in notes(app)))

        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: screen.view is not None
                       and screen.view.status == "stopped", timeout=LIVE_S)  # fmt: skip
        stopped = load_race_view(race_dir)
        assert stopped.status == "stopped"
        assert next(c for c in stopped.candidates if c.key == win.key).state == "winner"

        await pilot.press("c")  # goes on where it stopped
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: len(_starts(winner_run)) == 3, timeout=LIVE_S)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: screen.view is not None
                       and screen.view.status == "stopped", timeout=LIVE_S)  # fmt: skip
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen))
