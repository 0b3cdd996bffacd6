"""TensorBoard mirror: the run's events as a TensorBoard event file (`runs/<id>/tb/`).

Written by `export.tfevents` (the standard library: no tensorboard, TensorFlow
or torch package needed to write it), with each event's own wall time, so a
live mirror and a later `growcockpit export` of the same events.jsonl hold the
same values.
"""

from __future__ import annotations

import time
from pathlib import Path

from growcockpit.export import tfevents
from growcockpit.export.records import Recorder
from growcockpit.protocol.events import Event

FLUSH_S = 5.0


class TensorBoardMirror:
    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self._writer = tfevents.EventFileWriter(log_dir)
        self._recorder = Recorder()
        self._flushed = time.monotonic()

    def __call__(self, event: Event) -> None:
        rec = self._recorder.record(event)
        if rec is None:
            return
        values = [tfevents.scalar_value(tag, v) for tag, v in rec.scalars.items()]
        values += [tfevents.text_value(tag, text) for tag, text in rec.texts.items()]
        self._writer.add(tfevents.event(rec.wall_time, rec.step, values))
        if time.monotonic() - self._flushed >= FLUSH_S:  # a live TensorBoard sees it soon
            self._writer.flush()
            self._flushed = time.monotonic()

    def close(self) -> None:
        self._writer.close()
