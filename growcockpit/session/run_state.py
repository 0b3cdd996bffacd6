"""Everything the dashboard shows, folded from a run's events.

`RunState` is plain Python (no Textual): feed it events with `apply()` and read
its fields. What each event type does lives in `growcockpit.session.fold` (one
handler per type, dispatched through `fold.table.FOLDS`); this module holds the
state itself and what is derived from it. History is bounded: loss series are
compacted with min/max buckets once they pass `series_cap` points, the event
log and markers are capped deques, so a cockpit attached to a week-long run
stays small.
"""

from __future__ import annotations

from collections.abc import Iterable

from growcockpit.plan.show import layer_ranges
from growcockpit.protocol.event_fields import bad_field
from growcockpit.protocol.events import Event
from growcockpit.session.fold.layers import LayerRow
from growcockpit.session.fold.plan import StageInfo
from growcockpit.session.fold.records import GpuView, LogEntry, StageTiming
from growcockpit.session.fold.series import LayerHistory, Marker, Series, minmax_downsample
from growcockpit.session.fold.state import FINAL_STATUSES, RunData
from growcockpit.session.fold.table import FOLDS

__all__ = [
    "FINAL_STATUSES",
    "GpuView",
    "LayerHistory",
    "LayerRow",
    "LogEntry",
    "Marker",
    "RunState",
    "Series",
    "StageInfo",
    "StageTiming",
    "layer_ranges",
    "minmax_downsample",
]


class RunState(RunData):
    """The dashboard's view of one run, rebuilt from events: `RunData` plus dispatch."""

    def apply_all(self, events: Iterable[Event]) -> None:
        for ev in events:
            self.apply(ev)

    def apply(self, ev: Event) -> None:
        if ev.seq <= self.last_seq and ev.seq != 0:
            return  # already seen (a replay after reconnecting)
        if bad_field(ev) is not None:
            self.damaged += 1  # a value of the wrong type: skipped as export skips it
            return
        self.last_seq = max(self.last_seq, ev.seq)
        if self.t_start is None and ev.t:
            self.t_start = ev.t
        if ev.t:
            self.t_last = ev.t
        fold = FOLDS.get(type(ev))
        if fold is not None:
            fold(self, ev)
        self.changed()
