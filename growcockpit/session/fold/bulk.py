"""Folding raw event lines in bulk: what makes attaching to a long run fast.

Attaching to a run means folding its whole log (100k events is a few hours
of a fast run). Decoding each line into an event object and folding it one by
one costs about 20 µs an event; almost all of them are `step` events. So a
batch of lines is parsed with one `json.loads`, runs of consecutive steps are
folded column by column (`fold_steps`, the same arithmetic as
`metrics.on_step`, in tight loops), old `layer_stats` contribute only their
heatmap column, and every other event goes through the ordinary fold table.
The result equals folding the events one by one (tests compare the two); the
only shortcut is that per-layer rows (timing windows, sparklines) are built
from the last `FULL_LAYER_STATS` layer_stats of a batch, which cover both
windows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from growcockpit.protocol.event_codec import event_from_dict
from growcockpit.protocol.finite_json import NONFINITE
from growcockpit.session.fold import axes
from growcockpit.session.fold.layers import LayerRow
from growcockpit.session.fold.metrics import SEC_PER_STEP_ALPHA
from growcockpit.session.fold.records import StageTiming
from growcockpit.session.fold.series import SeriesBatch
from growcockpit.session.fold.totals import add_totals

if TYPE_CHECKING:
    from growcockpit.session.run_state import RunState


def _batch_loader() -> Callable[[bytes], Any]:
    """orjson parses a whole log several times faster; the stdlib parser is the fallback."""
    try:
        from orjson import loads
    except ImportError:  # pragma: no cover - a platform without an orjson wheel
        return json.loads
    return loads


loads_batch = _batch_loader()

FULL_LAYER_STATS = 64  # the last layer_stats of a batch that get the full per-row fold
CUTS_SERIES = frozenset(("rolled_back",))  # events whose fold drops series points
_NUMBER = (int, float)
_INT: frozenset[type] = frozenset((int,))
_NUM: frozenset[type] = frozenset(_NUMBER)
_NUM_OR_NONE: frozenset[type] = frozenset((int, float, type(None)))


def parse_lines(lines: list[bytes]) -> tuple[list[dict[str, Any]], int]:
    """JSON objects of `lines` in order, and how many lines were not one."""
    if not lines:
        return [], 0
    try:
        parsed = loads_batch(b"[" + b",".join(lines) + b"]")
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, list) and len(parsed) == len(lines):
        objs = [d for d in parsed if d.__class__ is dict]
        return objs, len(lines) - len(objs)
    objs = []
    for line in lines:  # a bad line somewhere: find it
        try:
            d = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(d, dict):
            objs.append(d)
    return objs, len(lines) - len(objs)


def fold_lines(state: RunState, lines: list[bytes]) -> tuple[int, int]:
    """Fold raw log lines into `state`; returns (events folded, lines skipped)."""
    objs, skipped = parse_lines(lines)
    folded, bad = fold_objects(state, objs)
    return folded, skipped + bad


def fold_objects(state: RunState, objs: list[dict[str, Any]]) -> tuple[int, int]:
    """Fold parsed log objects (`parse_lines`) into `state`; (events folded, objects skipped)."""
    skipped = 0
    stats_at = [i for i, d in enumerate(objs) if d.get("type") == "layer_stats"]
    full_from = stats_at[-FULL_LAYER_STATS] if len(stats_at) > FULL_LAYER_STATS else 0
    folded = 0
    steps: list[dict[str, Any]] = []
    batch = SeriesBatch()
    for i, d in enumerate(objs):
        kind = d.get("type")
        if kind == "step":
            steps.append(d)
            continue
        if steps:
            done = fold_steps(state, steps, batch)
            folded, skipped = folded + done, skipped + len(steps) - done
            steps = []
        if kind in CUTS_SERIES:
            batch.flush()  # the cut applies to every point folded before it
        if kind == "layer_stats" and i < full_from and heat_only(state, d):
            folded += 1
            continue
        if _apply(state, d):
            folded += 1
        else:
            skipped += 1
    if steps:
        done = fold_steps(state, steps, batch)
        folded, skipped = folded + done, skipped + len(steps) - done
    batch.flush()
    return folded, skipped


def heat_only(state: RunState, d: dict[str, Any]) -> bool:
    """An old layer_stats: only its heatmap column counts (False: fold it fully)."""
    seq, t, step, stage = d.get("seq", 0), d.get("t", 0.0), d.get("step", 0), d.get("stage", 0)
    layers = d.get("layers")
    if (
        seq.__class__ is not int
        or seq <= state.last_seq
        or t.__class__ not in _NUMBER
        or step.__class__ is not int
        or stage.__class__ is not int
        or layers.__class__ is not list
    ):
        return False
    column: dict[int, float] = {}
    rows = state.layers
    logged = []
    for stat in layers:
        if stat.__class__ is not dict:
            continue
        logged.append((stat.get("grad_norm"), stat.get("weight_norm"), stat.get("update_ratio")))
        lid, g = stat.get("id"), stat.get("grad_norm")
        if lid.__class__ is int and g.__class__ in _NUMBER and math.isfinite(g):
            column[lid] = g
            row = rows.get(lid)
            if row is None:
                row = rows[lid] = LayerRow(lid, trainable=stat.get("trainable") is True)
            row.grad_hist.append(g)
    _header(state, seq, t)
    state.heat.append(step, stage, column)
    add_totals(state, step, logged)
    state.changed(plot=True)
    return True


def _header(state: RunState, seq: int, t: float) -> None:
    state.last_seq = seq
    if state.t_start is None and t:
        state.t_start = t
    if t:
        state.t_last = t


def _column(rows: list[dict[str, Any]], key: str, default: Any) -> list[Any]:
    try:
        values = list(map(itemgetter(key), rows))
    except KeyError:
        values = [d.get(key, default) for d in rows]
    if str in set(map(type, values)):
        values = [NONFINITE.get(v, v) if v.__class__ is str else v for v in values]
    return values


def _fine(values: list[Any], kinds: frozenset[type]) -> bool:
    return set(map(type, values)) <= kinds


def fold_steps(state: RunState, rows: list[dict[str, Any]], batch: SeriesBatch) -> int:
    """Fold a run of consecutive `step` objects as `on_step` would one by one; their
    series points go to `batch` (flush it when the run of lines is done)."""
    seqs = _column(rows, "seq", 0)
    ts = _column(rows, "t", 0.0)
    steps = _column(rows, "step", 0)
    stages = _column(rows, "stage", 0)
    if not (
        _fine(seqs, _INT)
        and seqs[0] > state.last_seq
        and seqs == sorted(set(seqs))
        and _fine(ts, _NUM)
        and _fine(steps, _INT)
        and _fine(stages, _INT)
    ):
        return _one_by_one(state, rows, batch)
    losses = _column(rows, "loss", 0.0)
    lrs = _column(rows, "lr", 0.0)
    tokens = _column(rows, "tokens", 0)
    tps = _column(rows, "tokens_per_s", 0.0)
    step_ms = _column(rows, "step_ms", 0.0)
    parts = {k: _column(rows, k, None) for k in ("fwd_ms", "bwd_ms", "opt_ms", "data_ms")}
    if not all(
        _fine(col, _NUM_OR_NONE) for col in (losses, lrs, tokens, tps, step_ms, *parts.values())
    ):
        return _one_by_one(state, rows, batch)

    first_t = next((t for t in ts if t), None)
    if state.t_start is None and first_t:
        state.t_start = first_t
    last_t = next((t for t in reversed(ts) if t), None)
    if last_t:
        state.t_last = last_t
    state.last_seq = seqs[-1]
    state.step, state.loss, state.lr = steps[-1], losses[-1], lrs[-1]
    state.tokens_per_s = next((v for v in reversed(tps) if v), state.tokens_per_s)
    state.step_ms = next((v for v in reversed(step_ms) if v), state.step_ms)
    ranks = _column(rows, "rank_step_ms", None)
    state.rank_step_ms = next((v for v in reversed(ranks) if _rank_times(v)), state.rank_step_ms)
    state.tokens = next((v for v in reversed(tokens) if v), state.tokens)
    if state.status == "starting":
        state.status = "running"

    loss_x, loss_y = _points(steps, losses)
    batch.add(state.train_loss, loss_x, loss_y)
    batch.add(state.lr_series, *_points(steps, lrs))

    for key, series in (
        ("fwd_ms", state.fwd_series),
        ("bwd_ms", state.bwd_series),
        ("opt_ms", state.opt_series),
        ("data_ms", state.data_series),
    ):
        col = parts[key]
        last = next((v for v in reversed(col) if v is not None), None)
        if last is not None:
            setattr(state, key, last)
        batch.add(series, *_points(steps, col))
    batch.add(state.tok_s, *_points(steps, tps, drop_zero=True))
    batch.add(state.step_ms_series, *_points(steps, step_ms, drop_zero=True))
    axes.on_steps(state, steps, tokens, step_ms, batch)

    for stage, group in groupby(range(len(rows)), key=stages.__getitem__):
        span = list(group)  # consecutive positions
        lo, hi = span[0], span[-1] + 1
        timing = state.stage_timings.get(stage)
        if timing is None:
            timing = state.stage_timings[stage] = StageTiming(stage)
        timing.add_many(
            step_ms[lo:hi],
            tps[lo:hi],
            parts["fwd_ms"][lo:hi],
            parts["bwd_ms"][lo:hi],
            parts["opt_ms"][lo:hi],
            parts["data_ms"][lo:hi],
        )

    last_t_seen, last_step, gap, sps = (
        state.last_step_t,
        state.last_step_seen,
        state.step_gap,
        state.sec_per_step,
    )
    for x, t, ms in zip(steps, ts, step_ms, strict=True):
        if t:
            if last_t_seen is not None and not gap and x > last_step:
                dt = (t - last_t_seen) / (x - last_step)
                if dt >= 0:
                    sps = dt if sps is None else sps + SEC_PER_STEP_ALPHA * (dt - sps)
            last_t_seen, last_step, gap = t, x, False
        if sps is None and ms:
            sps = ms / 1000.0
    state.last_step_t, state.last_step_seen, state.step_gap = last_t_seen, last_step, gap
    state.sec_per_step = sps
    state.version += len(rows)
    state.plot_version += len(rows)
    return len(rows)


def _rank_times(value: Any) -> bool:
    """Each DDP rank's step time: a list of numbers (anything else is skipped)."""
    return (
        isinstance(value, list)
        and len(value) > 1
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    )


def _points(xs: list[Any], ys: list[Any], drop_zero: bool = False) -> tuple[list[Any], list[Any]]:
    """The points worth plotting, as `Series.append` keeps them: y not None, not NaN
    (nor 0 with `drop_zero`, for rates that are 0 when unknown)."""
    if None not in ys and not (drop_zero and 0 in ys):
        total = sum(ys)
        if total == total:  # no NaN (an inf - inf sum also takes the careful path)
            return xs, ys
    keep = [i for i, y in enumerate(ys) if y is not None and y == y and (y or not drop_zero)]
    return [xs[i] for i in keep], [ys[i] for i in keep]


def _one_by_one(state: RunState, rows: list[dict[str, Any]], batch: SeriesBatch) -> int:
    """The careful path for steps that are out of order or oddly typed."""
    batch.flush()  # earlier points first
    return sum(_apply(state, d) for d in rows)


def _apply(state: RunState, d: dict[str, Any]) -> bool:
    """Fold one object through the fold table; False (skipped) when it is no valid event.

    Event fields are not type-checked on decoding, so a hand-edited or corrupt
    line can fail inside a fold; it is skipped like an undecodable line rather
    than stopping the cockpit's tail."""
    damaged = state.damaged
    try:
        state.apply(event_from_dict(d))
    except (ValueError, TypeError, AttributeError, KeyError, RecursionError):
        return False
    return state.damaged == damaged  # a field of the wrong type: skipped, not folded
