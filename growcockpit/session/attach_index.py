"""A compact, derived index next to a run's log, so re-attaching to a long run is instant.

Folding a 100k-event log costs about a second of JSON parsing however it is
done; the folded `RunState` is small (every history in it is bounded). So a
cockpit that has folded a log writes the state, and the byte offset it
covers, to `cockpit-index.json` in the run directory; the next attach loads
it and folds only the lines after that offset.

The index is only a cache of the log: it is plain JSON (never pickle: a run
directory may come from someone else), it names the log it was made from (its
inode, and hashes of its first bytes and of the bytes just before the
offset), and anything that does not match or does not load is ignored and the
log is folded from the start. Deleting it loses nothing. A run directory that
is not writable simply gets no index.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import deque
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from growcockpit.protocol import safe_fs
from growcockpit.protocol.event_codec import event_from_dict
from growcockpit.protocol.events import RankMemory, RanksMemory
from growcockpit.protocol.rundir import RunPaths
from growcockpit.protocol.samples_event import Samples
from growcockpit.protocol.stage_steps import StageSteps
from growcockpit.session.fold.layers import TIMING_WINDOW, LayerRow
from growcockpit.session.fold.plan import StageInfo
from growcockpit.session.fold.records import HIST, GpuView, LogEntry, StageTiming
from growcockpit.session.fold.series import LayerHistory, Marker, Series
from growcockpit.session.run_state import RunState

INDEX_NAME = RunPaths.INDEX
FORMAT = 7  # bump when RunState or a fold changes what a folded state holds
PROBE = 4096  # bytes hashed at the log's start and just before the offset

_SERIES = (
    "train_loss",
    "val",
    "val_acc",
    "tok_s",
    "step_ms_series",
    "fwd_series",
    "bwd_series",
    "opt_series",
    "data_series",
    "lr_series",
    "grad_norm_series",
    "update_ratio_series",
    "tokens_at",
    "train_s_at",
    "flops_at",
)
_PLAIN = tuple(
    f.name
    for f in fields(RunState)
    if f.name
    not in {
        *_SERIES,
        "stages",
        "stage_runs",
        "gpus",
        "cpu_hist",
        "ram_hist",
        "stage_timings",
        "layers",
        "heat",
        "markers",
        "log",
        "samples",
        "backend_alive",
        "rank_memory",
    }
)


def _probe(path: Path, offset: int) -> tuple[int, int, str, str]:
    """(device, inode, hash of the first bytes, hash of the bytes before `offset`)."""
    with os.fdopen(safe_fs.open_read(path), "rb") as fh:  # a FIFO or link: refused
        st = os.fstat(fh.fileno())
        head = fh.read(min(PROBE, offset))
        fh.seek(max(0, offset - PROBE))
        before = fh.read(min(PROBE, offset))
    return (
        st.st_dev,
        st.st_ino,
        hashlib.sha256(head).hexdigest(),
        hashlib.sha256(before).hexdigest(),
    )


def state_to_dict(state: RunState) -> dict[str, Any]:
    return {
        "plain": {name: getattr(state, name) for name in _PLAIN},
        "series": {name: [getattr(state, name).xs, getattr(state, name).ys] for name in _SERIES},
        "stages": [list(vars(s).values()) for s in state.stages],
        "stage_runs": [list(state.stage_runs.starts.items()), list(state.stage_runs.ran.items())],
        "gpus": [
            {**vars(g), "util_hist": list(g.util_hist), "mem_hist": list(g.mem_hist)}
            for g in state.gpus.values()
        ],
        "cpu_hist": list(state.cpu_hist),
        "ram_hist": list(state.ram_hist),
        "stage_timings": [vars(t) for t in state.stage_timings.values()],
        "layers": [
            {
                **{k: v for k, v in vars(r).items() if not isinstance(v, deque)},
                "fwd_samples": list(r.fwd_samples),
                "bwd_samples": list(r.bwd_samples),
                "grad_hist": list(r.grad_hist),
            }
            for r in state.layers.values()
        ],
        "heat": [
            state.heat.steps,
            state.heat.stages,
            [[[k, v] for k, v in col.items()] for col in state.heat.columns],
        ],
        "markers": [list(vars(m).values()) for m in state.markers],
        "log": [list(vars(e).values()) for e in state.log],
        "rank_memory": asdict(state.rank_memory) if state.rank_memory else None,
        "samples": [ev.to_dict() for ev in state.samples],
    }


def state_from_dict(data: dict[str, Any]) -> RunState:
    """The inverse of `state_to_dict`; raises (KeyError, TypeError, ValueError) on a bad one."""
    plain = data["plain"]
    state = RunState(
        series_cap=int(plain["series_cap"]),
        log_cap=int(plain["log_cap"]),
        marker_cap=int(plain["marker_cap"]),
        heat_cap=int(plain["heat_cap"]),
        samples_cap=int(plain["samples_cap"]),
    )
    for name in _PLAIN:
        setattr(state, name, plain[name])
    for name in _SERIES:
        xs, ys = data["series"][name]
        series: Series = getattr(state, name)
        series.xs, series.ys = list(xs), list(ys)
    state.stages = [StageInfo(*row) for row in data["stages"]]
    starts, ran = data["stage_runs"]
    state.stage_runs = StageSteps(
        {int(i): int(n) for i, n in starts}, {int(i): int(n) for i, n in ran}
    )
    for g in data["gpus"]:
        view = GpuView(**{k: v for k, v in g.items() if not k.endswith("_hist")})
        view.util_hist.extend(g["util_hist"])
        view.mem_hist.extend(g["mem_hist"])
        state.gpus[view.index] = view
    state.cpu_hist = deque(data["cpu_hist"], maxlen=HIST)
    state.ram_hist = deque(data["ram_hist"], maxlen=HIST)
    for t in data["stage_timings"]:
        timing = StageTiming(**t)
        state.stage_timings[timing.index] = timing
    for r in data["layers"]:
        row = LayerRow(
            **{k: v for k, v in r.items() if k not in ("fwd_samples", "bwd_samples", "grad_hist")}
        )
        row.fwd_samples = deque(r["fwd_samples"], maxlen=TIMING_WINDOW)
        row.bwd_samples = deque(r["bwd_samples"], maxlen=TIMING_WINDOW)
        row.grad_hist.extend(r["grad_hist"])
        state.layers[row.id] = row
    steps, stages, columns = data["heat"]
    heat = LayerHistory(state.heat_cap)
    heat.steps, heat.stages = list(steps), list(stages)
    heat.columns = [{int(k): float(v) for k, v in col} for col in columns]
    heat.version = len(heat.columns)
    state.heat = heat
    state.markers.extend(Marker(*m) for m in data["markers"])
    state.log.extend(LogEntry(*e) for e in data["log"])
    memory = data["rank_memory"]
    if memory is not None:
        ranks = [RankMemory(**r) for r in memory.pop("ranks")]
        state.rank_memory = RanksMemory(**memory, ranks=ranks)
    state.samples.extend(_samples_event(d) for d in data["samples"])
    return state


def _samples_event(data: dict[str, Any]) -> Samples:
    event = event_from_dict(data)
    if not isinstance(event, Samples):
        raise ValueError("not a samples event")
    return event


def load(run_dir: Path, events: Path) -> tuple[RunState, int, int] | None:
    """(state, offset, events folded) from the run's index when it matches the log."""
    try:
        data = json.loads(safe_fs.read_bytes(Path(run_dir) / INDEX_NAME, safe_fs.MAX_INDEX_BYTES))
        if data.get("format") != FORMAT:
            return None
        offset = int(data["offset"])
        if os.stat(events).st_size < offset or list(_probe(events, offset)) != data["log"]:
            return None
        return state_from_dict(data["state"]), offset, int(data["events"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, safe_fs.RunDirError):
        return None
    except RecursionError:  # a planted index nested deep: rebuilt from the log, no traceback
        return None


def save(run_dir: Path, events: Path, state: dict[str, Any], offset: int, count: int) -> bool:
    """Write the index (atomically); False when the run directory is not writable."""
    path = Path(run_dir) / INDEX_NAME
    try:
        body = {
            "format": FORMAT,
            "offset": offset,
            "events": count,
            "log": list(_probe(events, offset)),
            "state": state,
        }
        safe_fs.write_atomic(path, json.dumps(body, separators=(",", ":")).encode("utf-8"))
    except (OSError, ValueError, safe_fs.RunDirError):
        return False
    return True
