"""Fold of `rolled_back`: a rollback (or a resume) restored a checkpoint; the run goes on from it.

`seq` keeps counting but `step` goes back, so everything the cockpit holds
beyond the restored step belongs to an abandoned timeline: the loss, val and
timing series, the heatmap columns and the time-axis markers are cut there
(otherwise the new steps would be drawn over the old ones and the curves
would zigzag). The event log keeps its lines: it is the record of what
happened. The position (step, stage, tokens, LR scale) is the checkpoint's.
A resume from the checkpoint where the log ends changes nothing here.

A pause for a blow-up (a non-finite loss, or a spike the sentinel caught) is
where a rollback is the way on: its log line says so, and the rollback key
then asks for the LR scale to train on (ui/screens/run_commands.py).
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING

from growcockpit.protocol.events import RolledBack
from growcockpit.session.fold import axes
from growcockpit.session.fold.samples import drop_samples_after

# Paused reasons after which the weights may be damaged: resuming as is blows up again
BLOW_UPS = ("non-finite loss", "loss spike", "gradient norm spike")

if TYPE_CHECKING:
    from growcockpit.session.fold.series import Series
    from growcockpit.session.fold.state import RunData


def _series(state: RunData) -> tuple[Series, ...]:
    return (
        state.train_loss,
        state.val,
        state.val_acc,
        state.tok_s,
        state.step_ms_series,
        state.fwd_series,
        state.bwd_series,
        state.opt_series,
        state.data_series,
        state.lr_series,
        state.grad_norm_series,
        state.update_ratio_series,
        state.tokens_at,
        state.train_s_at,
        state.flops_at,
    )


def blown_up(state: RunData) -> bool:
    """Paused for a blow-up, not yet rolled back or resumed: the rollback key offers the LR."""
    return state.status == "paused" and state.pause_reason in BLOW_UPS


def blow_up_hint(reason: str) -> str:
    """The paused line's offer after a blow-up ("" after any other pause)."""
    if reason not in BLOW_UPS:
        return ""
    return "; b rolls back to the last good checkpoint at the LR scale you choose"


def on_rolled_back(state: RunData, ev: RolledBack) -> None:
    if state.pause_reason in BLOW_UPS:
        state.pause_reason = "rolled back"  # still paused; the blow-up is behind it now
    went_back = max(state.train_loss.xs, default=ev.step) > ev.step or ev.step < state.step
    if ev.from_step is None and not went_back:
        return  # a resume from where the log ends: nothing to cut, run_started said it
    for series in _series(state):
        series.drop_after(ev.step)
    state.heat.drop_after(ev.step)
    drop_samples_after(state, ev.step)
    kept = [m for m in state.markers if m.step <= ev.step]
    state.markers.clear()
    state.markers.extend(kept)
    state.loss = state.train_loss.last()
    state.val_loss = state.val.last()
    state.val_accuracy = state.val_acc.last()
    if state.plateau is not None and state.plateau.step > ev.step:
        state.plateau = None  # the next plateau check says where the restored trigger stands
    state.step = ev.step
    state.plan_edit_steps[:] = [s for s in state.plan_edit_steps if s <= ev.step]
    state.tokens = ev.tokens
    state.lr_scale = ev.lr_scale
    _restore_stage(state, ev)
    for index in [i for i in state.stage_timings if i > ev.stage]:
        del state.stage_timings[index]  # stages the run has not reached again
    state.last_step_seen = ev.step
    axes.on_rolled_back(state, ev)
    state.step_gap = True  # the restore's time is not a step's
    if ev.checkpoint:
        state.last_checkpoint = ev.checkpoint  # later ones were set aside
    aside = f"; {ev.set_aside} later checkpoint(s) set aside" if ev.set_aside else ""
    name = PurePath(ev.checkpoint).name or f"step {ev.step}"
    what = f"rolled back to {name} from step {ev.from_step}"
    if ev.from_step is None:
        what = f"resumed from {name}: the steps logged after it are dropped from the plots"
    state.log_line(
        ev.step,
        "rollback",
        f"{what} (stage {ev.stage + 1}, LR scale ×{ev.lr_scale:g}){aside}",
        "warning",
        ev.t,
    )
    state.mark(ev.step, "rollback", f"↶{ev.step}", ev.t)


def _restore_stage(state: RunData, ev: RolledBack) -> None:
    """The restored stage's name and length from the stage list (a plan_changed before this
    event already put the checkpoint's plan there). Not yet entered: its stage_started follows."""
    state.stage_index = ev.stage
    state.stage_runs.rolled_back(ev.stage)
    state.stage_start_step = ev.step - ev.step_in_stage
    if 0 <= ev.stage < len(state.stages):
        info = state.stages[ev.stage]
        state.stage_name, state.stage_steps, state.stage_advance = (
            info.name,
            info.steps,
            info.advance,
        )
