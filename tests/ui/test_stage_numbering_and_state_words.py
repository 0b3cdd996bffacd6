"""One stage numbering and one state word on every surface. Stages are
numbered from 1 wherever a person reads them (cockpit, Home, `plan show`, `status`);
JSON for scripts carries 0-based indexes (`stage` in `status --json`, `index` in events).
A run that ran all its stages is `completed` everywhere (never `finished`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ui_fixtures import PLAN, settle, write_recorded_run

from growcockpit.plan import format_plan, plan_from_dict
from growcockpit.protocol import RunStatus, write_status
from growcockpit.protocol.status_fold import status_from_log
from growcockpit.session.catalog import run_entry
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.widgets import RunHeader


def cli(*args: str) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "growcockpit", *args], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


async def test_stage_numbers_and_the_state_word_agree(tmp_path: Path) -> None:
    from growcockpit.protocol import read_all

    run_dir = write_recorded_run(tmp_path / "runs" / "r")
    status = status_from_log(read_all(run_dir / "events.jsonl"), RunStatus(run_id="r"))
    write_status(run_dir / "status.json", status)

    table = format_plan(plan_from_dict(PLAN)).splitlines()
    rows = [ln.split()[:2] for ln in table if ln.split()[1:2] in (["shallow"], ["grow-4"])]
    assert rows == [["1", "shallow"], ["2", "grow-4"]]

    text = cli("status", str(run_dir))
    assert ": completed  plan mslt-demo  stage 2/2 (grow-4)" in text
    data = json.loads(cli("status", str(run_dir), "--json"))
    assert (data["state"], data["stage"], data["stage_name"]) == ("completed", 1, "grow-4")

    entry = run_entry(run_dir)
    assert entry is not None and (entry.status, entry.stage) == ("completed", "2/2 grow-4")

    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        header = str(app.screen.query_one(RunHeader).render())
        assert "completed" in header and "finished" not in header
        assert "stage 2/2 grow-4" in header
