"""Folds of the measurement events: steps, per-layer stats, evals, system samples."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from growcockpit.plan.footprint import stage_footprints
from growcockpit.plan.memory import Strategy, stage_memory
from growcockpit.protocol.events import Eval, LayerStats, RanksMemory, Step, System
from growcockpit.session.fold import axes
from growcockpit.session.fold.layers import LayerRow
from growcockpit.session.fold.plan import decode_plan
from growcockpit.session.fold.records import GpuView, StageTiming
from growcockpit.session.fold.totals import add_totals

if TYPE_CHECKING:
    from growcockpit.session.fold.state import RunData

SEC_PER_STEP_ALPHA = 0.1  # smoothing of wall seconds per step (for ETAs)


def on_step(state: RunData, ev: Step) -> None:
    state.step = ev.step
    state.loss = ev.loss
    state.lr = ev.lr
    state.tokens_per_s = ev.tokens_per_s or state.tokens_per_s
    state.step_ms = ev.step_ms or state.step_ms
    state.rank_step_ms = ev.rank_step_ms or state.rank_step_ms
    if state.status in ("starting", "paused"):  # a step: the loop runs (a tracked loop
        state.status = "running"  # told to stop while paused leaves the pause without a resume)
    if state.stop_step is not None and ev.step > state.stop_step and not state.stop_ignored:
        state.stop_ignored = True
        text = (
            f"still stepping after stop (step {ev.step}): the training loop did not end "
            "when step() returned False"
        )
        state.log_line(ev.step, "warning", text, "warning", ev.t)
    state.train_loss.append(ev.step, ev.loss)
    state.lr_series.append(ev.step, ev.lr)
    if ev.tokens:
        state.tokens = ev.tokens
    axes.on_step(state, ev.step, ev.tokens, ev.step_ms)
    if ev.fwd_ms is not None:
        state.fwd_ms = ev.fwd_ms
        state.fwd_series.append(ev.step, ev.fwd_ms)
    if ev.bwd_ms is not None:
        state.bwd_ms = ev.bwd_ms
        state.bwd_series.append(ev.step, ev.bwd_ms)
    if ev.opt_ms is not None:
        state.opt_ms = ev.opt_ms
        state.opt_series.append(ev.step, ev.opt_ms)
    if ev.data_ms is not None:
        state.data_ms = ev.data_ms
        state.data_series.append(ev.step, ev.data_ms)
    if ev.tokens_per_s:
        state.tok_s.append(ev.step, ev.tokens_per_s)
    if ev.step_ms:
        state.step_ms_series.append(ev.step, ev.step_ms)
    timing = state.stage_timings.get(ev.stage)
    if timing is None:
        timing = state.stage_timings[ev.stage] = StageTiming(ev.stage)
    timing.add(ev)
    if ev.t:
        last_t = state.last_step_t
        if last_t is not None and not state.step_gap and ev.step > state.last_step_seen:
            dt = (ev.t - last_t) / (ev.step - state.last_step_seen)
            if dt >= 0:
                sps = state.sec_per_step
                state.sec_per_step = dt if sps is None else sps + SEC_PER_STEP_ALPHA * (dt - sps)
        state.last_step_t = ev.t
        state.last_step_seen = ev.step
        state.step_gap = False
    if state.sec_per_step is None and ev.step_ms:
        state.sec_per_step = ev.step_ms / 1000.0
    state.changed(plot=True)


def on_layer_stats(state: RunData, ev: LayerStats) -> None:
    column: dict[int, float] = {}
    for stat in ev.layers:
        row = state.layers.get(stat.id)
        if row is None:
            row = state.layers[stat.id] = LayerRow(stat.id)
        if row.trainable != stat.trainable:
            row.restart_timing()  # frozen ↔ trainable: old backward times no longer apply
        row.trainable = stat.trainable
        row.grad_norm = stat.grad_norm
        row.weight_norm = stat.weight_norm
        row.update_ratio = stat.update_ratio
        if stat.fwd_ms is not None:
            row.fwd_samples.append(stat.fwd_ms)
        if stat.bwd_ms is not None:
            row.bwd_samples.append(stat.bwd_ms)
        if stat.grad_norm is not None and math.isfinite(stat.grad_norm):
            column[stat.id] = stat.grad_norm
            row.grad_hist.append(stat.grad_norm)
    state.heat.append(ev.step, ev.stage, column)
    add_totals(state, ev.step, ((s.grad_norm, s.weight_norm, s.update_ratio) for s in ev.layers))
    state.changed(plot=True)


def on_eval(state: RunData, ev: Eval) -> None:
    state.val_loss = ev.val_loss
    state.val.append(ev.step, ev.val_loss)
    if ev.accuracy is not None:  # older backends do not report it: keep what was seen
        state.val_accuracy = ev.accuracy
        state.val_acc.append(ev.step, ev.accuracy)
    state.changed(plot=True)


def on_system(state: RunData, ev: System) -> None:
    state.system_seen = True
    state.cpu_pct = ev.cpu_pct
    state.rss_bytes = ev.rss_bytes
    state.cpu_hist.append(ev.cpu_pct or 0.0)
    state.machine_cpu_pct, state.core_pct = ev.machine_cpu_pct, list(ev.core_pct)
    state.load_avg, state.cores = list(ev.load_avg), ev.cores
    if ev.ram_total:
        state.ram_used, state.ram_total = ev.ram_used, ev.ram_total
        state.ram_hist.append(ev.ram_used / ev.ram_total)
    for g in ev.gpus:
        view = state.gpus.get(g.index)
        if view is None:
            view = state.gpus[g.index] = GpuView(g.index)
        view.name = g.name or view.name
        view.util, view.mem_used, view.mem_total = g.util, g.mem_used, g.mem_total
        view.power_w, view.temp_c = g.power_w, g.temp_c
        view.run_mem, view.run_pids = g.proc_mem, g.run_pids
        view.util_hist.append(g.util or 0.0)
        frac = view.mem_frac
        view.mem_hist.append(frac if frac is not None else 0.0)


def on_rank_memory(state: RunData, ev: RanksMemory) -> None:
    """Each rank's memory, and the plan's estimate of one rank's parameters, gradients and
    optimizer state for the stage (made again only when the stage or the ranks change)."""
    before = state.rank_memory
    key = (ev.stage, ev.world_size, ev.strategy)
    if before is None or key != (before.stage, before.world_size, before.strategy):
        state.rank_memory_estimate = _state_estimate(state, ev)
    state.rank_memory = ev
    state.changed()


def _state_estimate(state: RunData, ev: RanksMemory) -> float | None:
    plan, _ = decode_plan(state.plan_dict, "run_started.plan")
    if plan is None or not 0 <= ev.stage < len(plan.stages):
        return None
    strategy: Strategy = "fsdp" if ev.strategy == "fsdp" else "ddp"
    footprint = stage_footprints(plan)[ev.stage]
    return stage_memory(footprint, strategy, ev.world_size, plan.optim.precision).state
