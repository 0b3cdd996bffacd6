"""TensorBoard mirror: the run's events as a TensorBoard event file (`runs/<id>/tb/`).

Written with TensorBoard's own event-file writer and protos (no TensorFlow,
no torch), with each event's own wall time, so a live mirror and a later
`growcockpit export` of the same events.jsonl hold the same values.
"""

from __future__ import annotations

from pathlib import Path

from tensorboard.compat.proto.event_pb2 import Event as TbEvent
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.plugins.text.summary_v2 import text_pb
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from growcockpit.export.records import Recorder
from growcockpit.protocol.events import Event


class TensorBoardMirror:
    def __init__(self, log_dir: Path) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir = log_dir
        self._writer = EventFileWriter(str(log_dir), flush_secs=5)
        self._recorder = Recorder()

    def __call__(self, event: Event) -> None:
        rec = self._recorder.record(event)
        if rec is None:
            return
        values = [Summary.Value(tag=tag, simple_value=v) for tag, v in rec.scalars.items()]
        for tag, text in rec.texts.items():
            values.extend(text_pb(tag, text).value)
        self._writer.add_event(
            TbEvent(wall_time=rec.wall_time, step=rec.step, summary=Summary(value=values))
        )

    def close(self) -> None:
        self._writer.close()
