"""`growcockpit export --tensorboard` works on the README's install (no
tensorboard package): the files are written by `export.tfevents`, whose bytes are
TensorBoard's own protos and which TensorBoard's loader reads back."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import TESTS

from growcockpit.export import tfevents
from growcockpit.protocol import read_all
from growcockpit.protocol.events import Step

BLOCKED = (
    "import sys, runpy; sys.modules['tensorboard'] = None; "  # as if not installed
    "sys.argv = ['growcockpit', *sys.argv[1:]]; runpy.run_module('growcockpit', run_name='__main__')"
)


def test_export_writes_tensorboard_files_without_the_package(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(TESTS / "data" / "ddp2-run", run_dir)
    out = tmp_path / "tb"
    res = subprocess.run(
        [sys.executable, "-c", BLOCKED, "export", str(run_dir), "--tensorboard", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert "tensorboard --logdir" in res.stdout and res.stderr == ""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(out), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    steps = [e for e in read_all(run_dir / "events.jsonl") if isinstance(e, Step)]
    assert [(s.step, s.value) for s in acc.Scalars("loss/train")] == [
        (e.step, pytest.approx(e.loss, rel=1e-6)) for e in steps
    ]
    stages = acc.Tensors("events/stage")
    assert stages and stages[0].tensor_proto.string_val[0].decode().startswith("stage 1")


def test_the_bytes_are_tensorboards_protos() -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
    from tensorboard.plugins.text.summary_v2 import text_pb

    text = text_pb("events/grow", "stack: 2 → 4 layers").value[0]
    scalar = Summary.Value(tag="loss/train", simple_value=5.25)
    expected = Event(wall_time=12.5, step=300, summary=Summary(value=[scalar, text]))
    mine = tfevents.event(
        12.5,
        300,
        [
            tfevents.scalar_value("loss/train", 5.25),
            tfevents.text_value("events/grow", "stack: 2 → 4 layers"),
        ],
    )
    assert mine == expected.SerializeToString()
    version = Event(wall_time=1.0, file_version="brain.Event:2")
    assert tfevents.version_event(1.0) == version.SerializeToString()
    for data in (b"", b"hello world", bytes(range(256)) * 3):
        rec = tfevents.record(data)
        assert rec[12:-4] == data
        assert int.from_bytes(rec[-4:], "little") == masked_crc32c(data)
    assert Event.FromString(
        tfevents.event(1.0, 2, [tfevents.scalar_value("x", 1e300)])
    ).summary.value[0].simple_value == float("inf")
