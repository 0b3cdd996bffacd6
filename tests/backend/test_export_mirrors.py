"""TensorBoard and W&B mirrors of the event log, read back with each tool's own reader.

A tiny plan trains with `[logging] tensorboard = true` and `wandb = "offline"`;
the files written while it trained (and by `growcockpit export` afterwards)
must hold the values and steps of events.jsonl.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from growcockpit.backend.run import run_training
from growcockpit.cli import main as cli_main
from growcockpit.export import open_mirrors
from growcockpit.plan import loads_plan
from growcockpit.protocol import read_all
from growcockpit.protocol.events import Eval, Event, Grow, LayerStats, StageStarted, Step, System

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("gc_cache")]

PLAN = """
name = "mirrored"
[model]
family = "bert"
hidden_size = 32
num_heads = 2
intermediate_size = 64
max_seq_len = 64
final_layers = 4
[data]
tokenizer = "train:2000"
seq_len = 64
[optim]
batch_size = 4
[metrics]
every_steps = 2
timing_every_steps = 2
system_every_s = 0.2
eval_every_steps = 3
eval_batches = 1
[logging]
tensorboard = true
wandb = "{wandb}"
[[stages]]
name = "shallow"
layers = 2
steps = 4
[[stages]]
name = "grow"
layers = 4
enter = "stack"
train = "new"
steps = 4
"""


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


HAS_WANDB = _has("wandb")
needs_tensorboard = pytest.mark.skipif(
    not _has("tensorboard"),
    reason='the tensorboard package is not installed (pip install "growcockpit[test]")',
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not _has("tensorboard"):
        pytest.skip('the tensorboard package is not installed (pip install "growcockpit[test]")')
    run_dir = tmp_path_factory.mktemp("runs") / "mirrored"
    text = PLAN.format(wandb="offline" if HAS_WANDB else "off")
    assert run_training(loads_plan(text), text, run_dir, device="cpu") == 0
    return run_dir


def tb_read(log_dir: Path) -> object:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def scalars(acc: object, tag: str) -> list[tuple[int, float]]:
    return [(s.step, s.value) for s in acc.Scalars(tag)]  # type: ignore[attr-defined]


def texts(acc: object, tag: str) -> list[tuple[int, str]]:
    return [
        (t.step, t.tensor_proto.string_val[0].decode())
        for t in acc.Tensors(tag)  # type: ignore[attr-defined]
    ]


def of(events: list[Event], cls: type) -> list:
    return [e for e in events if isinstance(e, cls)]


def check_tensorboard(log_dir: Path, events: list[Event]) -> None:
    acc = tb_read(log_dir)
    steps = of(events, Step)
    assert scalars(acc, "loss/train") == [(s.step, pytest.approx(s.loss)) for s in steps]
    assert scalars(acc, "optim/lr") == [(s.step, pytest.approx(s.lr)) for s in steps]
    assert scalars(acc, "speed/tokens_per_s") == [
        (s.step, pytest.approx(s.tokens_per_s, rel=1e-6)) for s in steps
    ]
    assert scalars(acc, "time/step_ms") == [
        (s.step, pytest.approx(s.step_ms, rel=1e-6)) for s in steps
    ]
    evals = of(events, Eval)
    assert evals and scalars(acc, "loss/val") == [
        (e.step, pytest.approx(e.val_loss)) for e in evals
    ]
    stats = of(events, LayerStats)
    layer0 = [(e.step, e.layers[0]) for e in stats if e.layers[0].grad_norm is not None]
    assert layer0 and scalars(acc, "layers/00/grad_norm") == [
        (step, pytest.approx(layer.grad_norm, rel=1e-6)) for step, layer in layer0
    ]
    fwd = [(e.step, e.layers[0].fwd_ms) for e in stats if e.layers[0].fwd_ms is not None]
    assert fwd and scalars(acc, "layers/00/fwd_ms") == [
        (step, pytest.approx(ms, rel=1e-6)) for step, ms in fwd
    ]
    systems = of(events, System)
    assert systems and [v for _, v in scalars(acc, "system/cpu_pct")] == [
        pytest.approx(e.cpu_pct, rel=1e-6) for e in systems
    ]
    stages = texts(acc, "events/stage")
    assert [step for step, _ in stages] == [e.step for e in of(events, StageStarted)]
    assert "stage 2 grow: 4 layers via stack" in stages[1][1]
    grow = of(events, Grow)[0]
    ((step, line),) = texts(acc, "events/grow")
    assert step == grow.step and line.startswith("stack: 2 → 4 layers")


def test_tensorboard_files_written_while_training_hold_the_event_log(run: Path) -> None:
    events = read_all(run / "events.jsonl")
    assert list((run / "tb").glob("events.out.tfevents.*"))
    check_tensorboard(run / "tb", events)


def test_export_converts_events_jsonl_to_the_same_tensorboard_data(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tb-export"
    assert cli_main(["export", str(run), "--tensorboard", str(out)]) == 0
    assert "tensorboard --logdir" in capsys.readouterr().out
    check_tensorboard(out, read_all(run / "events.jsonl"))
    assert cli_main(["export", str(tmp_path / "nope"), "--tensorboard", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no events.jsonl" in err and len(err.strip().splitlines()) == 1


def wandb_history(run_dir: Path) -> list[dict[str, object]]:
    """History rows of an offline W&B run, read from its .wandb file (LevelDB-style log of Records)."""
    from wandb.proto import wandb_internal_pb2

    (path,) = run_dir.glob("wandb/offline-run-*/run-*.wandb")
    data = path.read_bytes()
    assert data[:4] == b":W&B"
    block, pos, records, partial = 32768, 7, [], b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0:  # zero padding up to the end of the block
            pos += left
            continue
        chunk, pos = data[pos + 7 : pos + 7 + length], pos + 7 + length
        if kind == 1:
            records.append(chunk)
        elif kind == 2:
            partial = chunk
        elif kind == 3:
            partial += chunk
        elif kind == 4:
            records.append(partial + chunk)
    rows = []
    for raw in records:
        record = wandb_internal_pb2.Record()
        record.ParseFromString(raw)
        if record.WhichOneof("record_type") == "history":
            items = record.history.item
            rows.append({i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in items})
    return rows


@pytest.mark.skipif(
    not HAS_WANDB, reason='the wandb package is not installed (pip install "growcockpit[test]")'
)
def test_wandb_offline_run_holds_the_event_log(run: Path) -> None:
    from google.protobuf.message import DecodeError

    events = read_all(run / "events.jsonl")
    # the run trained in this process, so W&B's service outlives `finish()` and may still be
    # writing the offline file (seen once under load: no history rows yet); wait for it
    want, deadline = len(of(events, Step)), time.monotonic() + 60
    rows = wandb_history(run)
    while sum("loss/train" in r for r in rows) < want and time.monotonic() < deadline:
        time.sleep(0.5)
        try:
            rows = wandb_history(run)
        except DecodeError:  # a record half written: read again
            continue
    losses = [(r["_step"], r["loss/train"]) for r in rows if "loss/train" in r]
    assert losses == [(s.step, pytest.approx(s.loss)) for s in of(events, Step)]
    vals = [(r["_step"], r["loss/val"]) for r in rows if "loss/val" in r]
    assert vals == [(e.step, pytest.approx(e.val_loss)) for e in of(events, Eval)]
    grows = [r["events/grow"] for r in rows if "events/grow" in r]
    assert len(grows) == 1 and str(grows[0]).startswith("stack: 2 → 4 layers")
    assert any("system/cpu_pct" in r for r in rows)


def test_tensorboard_files_need_no_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`logging.tensorboard = true` on the default install: no package."""
    for name in [m for m in sys.modules if m.startswith(("tensorboard", "growcockpit.export.tb"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    mirrors = open_mirrors(tmp_path, True, "off", "r", {})
    assert mirrors is not None
    mirrors.close()
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))


def test_mirrors_are_imported_only_when_asked_for() -> None:
    """The default path never loads tensorboard or wandb; the export layer never loads torch."""
    code = (
        "import sys; import growcockpit.backend.run, growcockpit.export, growcockpit.cli; "
        "print(','.join(m for m in ('tensorboard', 'wandb') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    code = "import sys, growcockpit.export.records; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
