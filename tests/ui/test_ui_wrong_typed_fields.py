"""One event line whose field has the wrong type (`"loss": "x"`, `{}`, `[1]`)
is skipped by the cockpit's fold, as `export` skips it, instead of a Textual traceback
(with exit code 0) when the dashboard drew it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ui_fixtures import T0, screen_text, settle, write_recorded_run

from growcockpit.export import export_tensorboard
from growcockpit.protocol.event_codec import event_from_dict
from growcockpit.protocol.event_fields import bad_field
from growcockpit.session.fold.bulk import fold_lines
from growcockpit.session.run_state import RunState
from growcockpit.ui import GrowCockpitApp

BAD = ['"x"', "{}", "[1]"]


def append_bad_step(run: Path, value: str) -> None:
    events = run / "events.jsonl"
    last = json.loads(events.read_text().splitlines()[-1])
    line = (
        f'{{"type": "step", "seq": {last["seq"] + 1}, "t": {last["t"] + 1}, '
        f'"step": 9999, "stage": 0, "loss": {value}}}\n'
    )
    with events.open("a") as fh:
        fh.write(line)


@pytest.mark.parametrize("value", BAD)
def test_the_fold_and_export_skip_the_line(tmp_path: Path, value: str) -> None:
    run = write_recorded_run(tmp_path / "run")
    append_bad_step(run, value)
    state = RunState()
    fold_lines(state, (run / "events.jsonl").read_bytes().splitlines())
    assert isinstance(state.loss, float) and state.step != 9999 and state.damaged == 1
    summary = export_tensorboard(run, tmp_path / "tb")
    assert "(1 unreadable lines skipped)" in summary, summary


@pytest.mark.parametrize(
    "data,field",
    [
        ({"type": "step", "loss": "x"}, "loss"),
        ({"type": "step", "rank_step_ms": [1, "a"]}, "rank_step_ms"),
        ({"type": "eval", "val_loss": None}, "val_loss"),
        ({"type": "layer_stats", "layers": [{"id": 0, "trainable": "yes"}]}, "layers"),
        ({"type": "step", "loss": 3, "fwd_ms": None}, None),
    ],
)
def test_bad_field(data: dict[str, object], field: str | None) -> None:
    assert bad_field(event_from_dict({"seq": 1, "t": 1.0, **data})) == field


@pytest.mark.parametrize("value", BAD)
async def test_attach_draws_the_run(tmp_path: Path, value: str) -> None:
    run = write_recorded_run(tmp_path / "runs" / "r1")
    append_bad_step(run, value)
    app = GrowCockpitApp(run_dir=run, runs_root=tmp_path / "runs", clock=lambda: T0 + 100)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert "loss" in screen_text(app)
    assert app.return_code in (None, 0) and app._exception is None
