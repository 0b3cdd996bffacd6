"""SVG snapshots of the designer's Plan & model and Optimizer tabs, reached by their keys
(2 and 4), at 80×24 and 160×48 (the tabs had no key, and a fixed label
column cut "intermediate size" to "intermedia" beside its value). Regenerate after a
deliberate UI change with
`pytest tests/ui/test_ui_designer_tab_snapshots.py --snapshot-update` and review the SVGs."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from ui_fixtures import write_plan

from growcockpit.ui import GrowCockpitApp

SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])


def _press(key: str):  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await pilot.pause(0.1)
        await pilot.app.workers.wait_for_complete()
        await pilot.press(key)
        await pilot.pause(0.3)

    return run_before


@SIZES
@pytest.mark.parametrize("tab", ["2", "4"], ids=["plan-and-model", "optimizer"])
def test_designer_tab(
    snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int], tab: str
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    write_plan(tmp_path / "mslt-snapshot.toml")
    app = GrowCockpitApp(
        plan_path=Path("mslt-snapshot.toml"), samples=tmp_path, theme="dark", workdir=tmp_path
    )
    assert snap_compare(app, terminal_size=size, run_before=_press(tab))
