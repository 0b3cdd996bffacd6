"""Damaged or hostile input to the CLI is one line on stderr, exit 2, never a traceback."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from growcockpit.cli import main
from growcockpit.protocol import EventLog, read_all, read_status
from growcockpit.protocol.events import LayerStat, LayerStats, Step
from growcockpit.protocol.rundir import RunStatus, write_status


def _one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert len(err) < 400
    return err


def _strict(text: str) -> object:
    """JSON as other tools read it: NaN/Infinity tokens are an error."""

    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    return d


def test_binary_file_to_edit_stages(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blob = tmp_path / "stages.bin"
    blob.write_bytes(bytes(range(256)) * 4)
    err = _one_line_error(capsys, "ctl", str(run_dir), "edit_stages", str(blob))
    assert str(blob) in err and "not UTF-8" in err


def test_deeply_nested_toml_to_edit_stages(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    err = _one_line_error(capsys, "ctl", str(run_dir), "edit_stages", str(deep))
    assert "invalid TOML" in err


@pytest.mark.parametrize(
    ("content", "named"),
    [
        (b'{"run_id": "r", "state": "running", "pid": 1}\xff\xfe', "not UTF-8"),
        (b'{"run_id": "\xc3\x28"}', "not UTF-8"),
        (b'{"state": "running", "pid": "abc"}', 'pid = "abc"'),
        (b'{"state": "running", "step": 1.5}', "step = 1.5"),
        (b'{"state": ["running"]}', "state = ['running']"),
        (b'{"loss": "bad"}', 'loss = "bad"'),
        (b"[" * 100_000, "not valid JSON"),
        (b"{" + b'"a": ' * 1 + b'"' + b"x" * 100_000, "not valid JSON"),
    ],
)
def test_damaged_status_json(
    run_dir: Path, capsys: pytest.CaptureFixture[str], content: bytes, named: str
) -> None:
    (run_dir / "status.json").write_bytes(content)
    err = _one_line_error(capsys, "status", str(run_dir))
    assert str(run_dir / "status.json") in err and named in err


@pytest.mark.parametrize("pid", ["12345678901234567890", "-5", "4194304", "0"])
def test_impossible_pid_is_a_dead_backend(
    run_dir: Path, capsys: pytest.CaptureFixture[str], pid: str
) -> None:
    (run_dir / "status.json").write_text(f'{{"run_id": "r", "state": "running", "pid": {pid}}}')
    assert main(["status", str(run_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "crashed"


def test_status_of_a_completed_run_names_its_last_stage(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """status.json of a run finished before the fix: stage index one past the last stage."""
    write_status(
        run_dir / "status.json",
        RunStatus(run_id="r", state="completed", stage=2, num_stages=2, stage_name="grow"),
    )
    assert main(["status", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "stage 2/2" in out and "3/2" not in out
    from growcockpit.session.catalog import run_entry

    entry = run_entry(run_dir)
    assert entry is not None and entry.stage == "2/2 grow"


def test_nonfinite_numbers_are_standard_json_and_read_back(run_dir: Path) -> None:
    log = EventLog(run_dir / "events.jsonl")
    log.append(Step(step=1, loss=math.nan, lr=math.inf, rank_step_ms=[1.0, -math.inf]))
    log.append(LayerStats(step=1, layers=[LayerStat(id=0, trainable=True, grad_norm=math.inf)]))
    log.append(Step(step=2, loss=2.5, lr=1e-3))
    log.close()
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        _strict(line)
    first, stats, second = read_all(run_dir / "events.jsonl")
    assert isinstance(first, Step) and math.isnan(first.loss) and first.lr == math.inf
    assert first.rank_step_ms == [1.0, -math.inf]
    assert isinstance(stats, LayerStats) and stats.layers[0].grad_norm == math.inf
    assert isinstance(second, Step) and second.loss == 2.5


def test_old_logs_with_nan_tokens_still_read(run_dir: Path) -> None:
    (run_dir / "events.jsonl").write_text(
        '{"seq":1,"t":0.0,"type":"step","step":1,"loss":NaN,"lr":Infinity}\n'
    )
    (event,) = read_all(run_dir / "events.jsonl")
    assert isinstance(event, Step) and math.isnan(event.loss) and event.lr == math.inf


def test_status_json_with_nan_loss(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_status(run_dir / "status.json", RunStatus(run_id="r", state="stopped", loss=math.nan))
    _strict((run_dir / "status.json").read_text())
    status = read_status(run_dir)
    assert status.loss is not None and math.isnan(status.loss)
    assert main(["status", str(run_dir)]) == 0
    assert main(["status", str(run_dir), "--json"]) == 0
    out = capsys.readouterr().out
    _strict(out[out.index("{") :])


def test_status_never_prints_terminal_controls(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A copied run directory's status.json cannot redraw the terminal through `status`."""
    write_status(
        run_dir / "status.json",
        RunStatus(run_id="r", state="stopped", plan_name="x\x1b[2J\u202eevil\nfake: ok"),
    )
    assert main(["status", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and out.count("\n") == 1
    assert "\\x1b[2J" in out and "\\u202e" in out
