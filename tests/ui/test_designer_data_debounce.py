"""Typing a `data.source` never waits on the disk: the file checks run in a worker, later.

Typing `../byo/own.jsnl` made `.` and `..` directories for a keystroke each, and each was
validated, walking the parent tree, before the next key was shown (8 s for one `.` on a
loaded machine). Here `resolve_source` is as slow as it likes (it waits for the test):
every key still lands at once, the last answer stays on screen marked "checking", and the
answer for the whole path comes after.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from textual.widgets import Input, Static
from ui_fixtures import PLAN_TOML, wait_for

from growcockpit.plan import data_checks
from growcockpit.plan.data_source import SourceFiles, resolve_source
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import designer_checks
from growcockpit.ui.screens.designer import DesignerScreen


def _shown(screen: DesignerScreen, wid: str) -> str:
    return str(screen.query_one(wid, Static).render())


async def test_a_slow_source_check_does_not_delay_the_next_keystroke(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "byo").mkdir()
    (tmp_path / "byo" / "own.jsonl").write_text('{"text": "hello"}\n')
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN_TOML.replace("[optim]", '[data]\nsource = "nope/x.txt"\n\n[optim]', 1))

    gate = threading.Event()
    gate.set()
    on_ui_thread: list[str] = []
    checked: list[str] = []

    def slow_resolve(source: str) -> SourceFiles:
        if threading.current_thread() is threading.main_thread():
            on_ui_thread.append(source)  # between two keystrokes: what must never happen
        else:
            assert gate.wait(timeout=20), "the test never opened the gate"
        checked.append(source)
        return resolve_source(source)

    monkeypatch.setattr(data_checks, "resolve_source", slow_resolve)
    monkeypatch.setattr(designer_checks, "resolve_source", slow_resolve)

    app = GrowCockpitApp(plan_path=plan, runs_root=tmp_path / "runs", workdir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DesignerScreen))
        screen = app.screen
        assert isinstance(screen, DesignerScreen)
        await wait_for(pilot, screen.checks.fresh)
        before = _shown(screen, "#data-source-err")
        assert "no such file" in before

        gate.clear()  # from now on every check takes as long as the test wants
        await pilot.press("3", "tab")
        await pilot.pause(0.1)
        field = screen.focused
        assert isinstance(field, Input) and field.id == "data-source"
        field.value = ""
        await pilot.pause()
        typed = ""
        for ch in "../byo/own.jsnl":
            await pilot.press(ch)
            typed += ch
            assert field.value == typed  # shown at once, a check running or not
        assert screen.doc.plan is not None and screen.doc.plan.data.source == typed
        assert not screen.checks.fresh()
        assert _shown(screen, "#data-state").startswith("checking the data…")
        assert "checking the data…" in _shown(screen, "#plan-problems")
        assert "no such file" in _shown(screen, "#data-source-err")  # the last answer stays

        gate.set()
        await wait_for(pilot, screen.checks.fresh)
        answer = _shown(screen, "#data-source-err")
        assert "own.jsnl" in answer or "no such file" in answer, answer
        assert "checking" not in _shown(screen, "#data-state")
    assert on_ui_thread == []
    assert len(checked) < len(typed)  # debounced: not one walk per keystroke
