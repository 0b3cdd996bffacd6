"""SVG snapshots of Home with extra run columns (plan keys, a tag mark), sorted by a
plan key, and filtered by a tag, at 160×48 and 80×24.

Regenerate after a deliberate UI change with
`pytest tests/ui/test_ui_home_columns_snapshots.py --snapshot-update` and review the SVGs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_ui_home_columns import make_runs
from textual.pilot import Pilot
from ui_fixtures import T0, write_plan

from growcockpit.ui import GrowCockpitApp

SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
SETTINGS = {
    "home_runs": {
        "columns": ["model.family", "optim.lr", "stages", "#baseline"],
        "sort": "optim.lr",
        "descending": True,
    }
}


def _app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GrowCockpitApp:
    monkeypatch.chdir(tmp_path)
    xdg = tmp_path / "xdg"
    (xdg / "growcockpit").mkdir(parents=True)
    (xdg / "growcockpit" / "settings.json").write_text(json.dumps(SETTINGS))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    samples = tmp_path / "samples"
    samples.mkdir()
    write_plan(samples / "sample.toml")
    runs = make_runs(tmp_path / "runs")
    return GrowCockpitApp(
        runs_root=runs, workdir=tmp_path, samples=samples, clock=lambda: T0 + 100, theme="dark"
    )


async def _idle(pilot: Pilot[None]) -> None:
    await pilot.pause(0.1)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause(0.3)


async def _filtered(pilot: Pilot[None]) -> None:
    await pilot.press("/", *"tag:mslt", "enter")
    await _idle(pilot)


@SIZES
def test_home_with_columns_sorted(
    snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(_app(tmp_path, monkeypatch), terminal_size=size, run_before=_idle)


@SIZES
def test_home_filtered_by_tag(
    snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(_app(tmp_path, monkeypatch), terminal_size=size, run_before=_filtered)
