"""The race's result: per candidate the loss at each rung, compute used, where it was cut,
and the verdict against the baseline, with the race's own compute in every ratio.

Read from the study (rung values, cuts) and the run directories' event logs (compute
actually used, curves), so the result of a finished, running or killed race is the
same function of what is on disk.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from growcockpit.compare.claim import GrowthClaim, claim_text
from growcockpit.compare.envelope import metric_of
from growcockpit.plan import PlanError, load_plan
from growcockpit.race.candidates import Candidate, RaceSpec
from growcockpit.race.depth_controls import Arm, RaceGate, race_gate
from growcockpit.race.halving import Point, Speedup, best_tied, first_reach_flops
from growcockpit.race.journal import replay_errors
from growcockpit.race.runs import RunState, run_state
from growcockpit.race.short_controls import race_claim
from growcockpit.race.study import trials_by_key


@dataclass(frozen=True)
class Row:
    """One candidate in the result."""

    key: str
    baseline: bool
    sets: list[str]
    rung_losses: list[float | None]  # None: not measured there (cut before)
    flops: float  # every step its runs took, race and continuation
    race_flops: float  # up to the last rung it was measured at
    cut_at: int | None  # 0-based rung it was cut at; None: still in or a winner
    state: str  # racing | cut | winner | finished | failed
    final_loss: float | None
    runs: list[str]
    controls: list[str] | None = None  # a control's growth candidates; None: not a control
    depth: int = 0  # a fixed-size control's depth; 0: not one
    short: float = 0.0  # a short-schedule control's share of the baseline's steps; 0: not one


@dataclass(frozen=True)
class RaceResult:
    rungs: list[float]
    budget_flops: float
    rows: list[Row]
    race_flops: float
    winner: str | None
    speedup: Speedup | None
    tied: list[str] = field(default_factory=list)  # the best share one score: no winner
    depth_gate: RaceGate | None = None  # baseline against the fixed-size controls
    metric: str = "val_loss"  # what the winner's claim is measured on
    target_value: float | None = None  # its target (None: the baseline's loss)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.depth_gate is not None:
            out["depth_gate"]["pays"] = self.depth_gate.gate.pays
        if self.speedup is not None:
            out["speedup"]["sooner"] = self.speedup.sooner
            out["speedup"]["with_race"] = self.speedup.with_race
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, allow_nan=False, default=str)


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def _billed(trial: optuna.trial.FrozenTrial, rung: int) -> float:
    """The compute billed to the candidate up to `rung` (0 when the journal holds none)."""
    flops = trial.user_attrs.get(f"flops_{rung}", 0.0)
    ok = isinstance(flops, int | float) and not isinstance(flops, bool) and math.isfinite(flops)
    return float(flops) if ok else 0.0


def _row(c: Candidate, spec: RaceSpec, trial: optuna.trial.FrozenTrial) -> Row:
    states: list[RunState] = [run_state(Path(r)) for r in c.runs]
    losses = [_finite(trial.intermediate_values.get(r)) for r in range(len(spec.rungs))]
    measured = [r for r in range(len(spec.rungs)) if r in trial.intermediate_values]
    race_flops = _billed(trial, measured[-1]) if measured else 0.0
    state = {
        TrialState.PRUNED: "cut",
        TrialState.COMPLETE: "finished",
        TrialState.FAIL: "failed",
    }.get(trial.state, "racing")
    cut_at = measured[-1] if trial.state == TrialState.PRUNED and measured else None
    final = None
    if trial.state == TrialState.COMPLETE and trial.value is not None:
        final = _finite(trial.value)
    return Row(
        c.key,
        c.baseline,
        c.sets,
        losses,
        sum(s.flops for s in states),
        race_flops,
        cut_at,
        state,
        final,
        c.runs,
        c.controls if c.control else None,
        c.depth,
        c.short,
    )


def _last(row: Row) -> tuple[int, float] | None:
    known = [(r, v) for r, v in enumerate(row.rung_losses) if v is not None]
    return known[-1] if known else None


def race_result(spec: RaceSpec, study: optuna.Study) -> RaceResult:
    with replay_errors():
        return _result(spec, study)


def _result(spec: RaceSpec, study: optuna.Study) -> RaceResult:
    trials = trials_by_key(study)
    rows = [_row(c, spec, trials[c.key]) for c in spec.candidates if c.key in trials]
    race_flops = sum(r.race_flops for r in rows)
    top = len(spec.rungs) - 1
    at_top = {r.key: r.rung_losses[top] for r in rows if r.rung_losses and r.state != "cut"}
    known = bool(at_top) and all(v is not None for v in at_top.values())
    winner, tie = _winner(at_top, rows) if known else (None, [])
    rows = [
        (Row(**{**asdict(r), "state": "winner"}) if r.key == winner and r.state == "racing" else r)
        for r in rows
    ]
    return RaceResult(
        spec.rungs,
        spec.budget_flops,
        rows,
        race_flops,
        winner,
        _speedup(spec, rows, winner, race_flops),
        tie,
        _gate(spec, rows),
        spec.metric,
        spec.target_value,
    )


def _gate(spec: RaceSpec, rows: list[Row]) -> RaceGate | None:
    """The depth gate over the baselines and the fixed-size controls (race/depth_controls.py)."""
    if not any(r.depth for r in rows):
        return None
    full = max(spec_depth(spec), *(r.depth for r in rows))
    arms: dict[int, list[Arm]] = {}
    for r in rows:
        depth = r.depth or (full if r.baseline else 0)
        if depth:
            arms.setdefault(depth, []).append((r.key, r.runs, r.rung_losses))
    return race_gate(spec.rungs, arms)


def spec_depth(spec: RaceSpec) -> int:
    """The race's full depth: one more than its deepest control, at least (the baseline's
    own depth is read from its plan file)."""
    for c in spec.candidates:
        if c.baseline:
            try:
                return load_plan(c.plan_files[0]).model.final_layers
            except (OSError, PlanError):
                break
    return 1 + max((c.depth for c in spec.candidates), default=0)


def _winner(at_top: dict[str, float | None], rows: list[Row]) -> tuple[str | None, list[str]]:
    """The best at the last rung; a tie there is broken by the tied candidates' full-budget
    final losses (the next measurement), and while it is not, there is no winner."""
    best = best_tied(at_top)
    if len(best) == 1:
        return best[0], []
    finals = {r.key: r.final_loss for r in rows if r.key in best}
    if all(v is not None for v in finals.values()):
        after = best_tied(finals)
        if len(after) == 1:
            return after[0], []
        return None, after
    return None, best


def _speedup(
    spec: RaceSpec, rows: list[Row], winner: str | None, race_flops: float
) -> Speedup | None:
    """The best baseline's loss at the last rung it was measured at, against the compute at
    which the winner's own curve (first seed) first reached it."""
    bases = [last for r in rows if r.baseline and (last := _last(r)) is not None]
    win = next((r for r in rows if r.key == winner), None)
    if not bases or win is None or win.baseline:
        return None
    rung, loss = min(bases, key=lambda b: (-b[0], b[1]))  # the furthest, then the lowest
    points: list[Point] = run_state(Path(win.runs[0])).points
    return Speedup(
        loss, spec.rungs[rung], first_reach_flops(points, loss), race_flops, win.race_flops
    )


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.4f}"


def format_result(result: RaceResult) -> str:
    """The table and the verdict, as the CLI prints them."""
    head = ["candidate", *[f"rung {i + 1}" for i in range(len(result.rungs))], "FLOPs", "state"]
    lines = [
        f"rungs at {', '.join(f'{c:.3g}' for c in result.rungs)} FLOPs "
        f"(full budget {result.budget_flops:.3g})",
    ]
    table = [head]
    for r in result.rows:
        state = f"cut at rung {r.cut_at + 1}" if r.cut_at is not None else r.state
        if r.final_loss is not None:
            state += f", final {r.final_loss:.4f}"
        name = r.key + (" (baseline)" if r.baseline else "")
        name += " (control)" if r.controls is not None else ""
        name += f" (fixed {r.depth}-layer control)" if r.depth else ""
        name += f" (full@{r.short:g}: the full model on a shorter schedule)" if r.short else ""
        table.append([name, *map(_fmt, r.rung_losses), f"{r.flops:.3g}", state])
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in table]
    lines.append(
        f"race compute: {result.race_flops:.3g} FLOPs over {len(result.rows)} candidates "
        f"({result.race_flops / result.budget_flops:.2f}× one full budget)"
    )
    lines.append(verdict_line(result))
    lines += control_lines(result)
    lines += gate_lines(result)
    return "\n".join(lines)


def gate_lines(result: RaceResult) -> list[str]:
    """Which fixed depth is best at this budget, and whether depth pays."""
    return result.depth_gate.lines() if result.depth_gate is not None else []


def verdict_line(result: RaceResult) -> str:
    if result.tied:
        names = ", ".join(result.tied)
        ended = all(r.final_loss is not None for r in result.rows if r.key in result.tied)
        if ended:
            return f"tied: {names} end the full budget at the same loss; no winner, no speedup"
        return (
            f"tied at the last rung: {names} (the same loss); no winner and no speedup yet: "
            "the full budget breaks the tie"
        )
    if result.winner is None:
        return "no winner yet: the race has not reached its last rung"
    win = next(r for r in result.rows if r.key == result.winner)
    if win.depth:
        return (
            f"winner: {win.key}, a fixed {win.depth}-layer control: a smaller model is the "
            "best use of this budget; no growth speedup is claimed"
        )
    if win.short:
        return (
            f"winner: {win.key}, the full model trained for {win.short:g} of the budget "
            f"(full@{win.short:g}): a shorter schedule of the full model is the best use of "
            "this budget; no growth speedup is claimed"
        )
    s = result.speedup
    gate = result.depth_gate
    if s is not None and s.sooner is not None and gate is not None and gate.gate.undecided:
        return (
            f"winner: {result.winner}; {gate.gate.text} (measured: the baseline's loss "
            f"{s.sooner:.2f}× sooner)"
        )
    if s is not None and s.sooner is not None and gate is not None and not gate.gate.pays:
        return (
            f"winner: {result.winner}; depth does not pay at this budget, so no growth speedup "
            f"is claimed (measured: the baseline's loss {s.sooner:.2f}× sooner)"
        )
    if s is None:
        return f"winner: {result.winner} (the baseline itself, or no baseline measured)"
    if s.sooner is None:
        return (
            f"winner: {result.winner}; it has not reached the baseline's loss "
            f"{s.target_loss:.4f} (estimated from the race)"
        )
    line = (
        f"winner: {result.winner} reaches the baseline's loss {s.target_loss:.4f} "
        f"{s.sooner:.2f}× sooner (estimated from the race: {s.winner_flops:.3g} vs "
        f"{s.baseline_flops:.3g} FLOPs); {race_cost_text(s.with_race)}"
    )
    if gate is not None and gate.gate.pays:
        line += "; " + _against_best_control(result, gate, win)
    claim = winner_claim(result, win, s.target_loss)
    if claim is None:
        return line
    if claim.claimed:
        return claim_text(claim, line)
    return f"winner: {win.key}; {claim_text(claim, line)}"


def _named(row: Row) -> str:
    """A control's name as the claim says it: `full@0.5 <key>`, `depth-1 <key>`."""
    if row.short:
        return f"full@{row.short:g} {row.key}"
    return f"depth-{row.depth} {row.key}" if row.depth else row.key


def winner_claim(result: RaceResult, win: Row, target_loss: float) -> GrowthClaim | None:
    """The growth winner's claim against the baseline, the short schedules and the fixed
    controls among the rows (race/short_controls.py); None without any such control."""
    full = {_named(r): r.runs for r in result.rows if (r.baseline or r.short) and r is not win}
    fixed = {_named(r): r.runs for r in result.rows if r.depth}
    if not any(r.short or r.depth for r in result.rows):
        return None
    missing = [r.key for r in result.rows if (r.short or r.depth) and r.state == "failed"]
    gate = result.depth_gate.gate if result.depth_gate is not None else None
    metric = metric_of(result.metric)
    return race_claim(
        win.runs, full, fixed, target_loss, gate, missing, (), metric, result.target_value
    )


def race_cost_text(with_race: float | None) -> str:
    """The speedup once the search is paid for, in words: the ratio alone ("0.34×") read
    as a slowdown of the winner, when it says what the race cost."""
    what = (
        "counting the race's own compute too (what every other candidate trained, plus "
        "the winner's way to that loss)"
    )
    if with_race is None or with_race <= 0:
        return f"{what}: not known yet"
    if with_race >= 1:
        return f"{what}: {with_race:.2f}× sooner still, so the race paid for itself"
    return (
        f"{what}: {with_race:.2f}×, i.e. finding this plan cost {1 / with_race:.1f}× the "
        "baseline's compute to that loss: the search pays off only when the winning plan "
        "is trained again"
    )


def _against_best_control(result: RaceResult, gate: RaceGate, win: Row) -> str:
    """Where depth pays: how much sooner the winner reaches the best control's loss."""
    assert gate.gate.best_control is not None  # called where depth pays
    key = gate.keys[gate.gate.best_control.layers]
    row = next(r for r in result.rows if r.key == key)
    loss = row.rung_losses[gate.rung]
    reach = first_reach_flops(run_state(Path(win.runs[0])).points, loss) if loss else None
    if loss is None or reach is None or reach <= 0:
        return f"the best control {key}'s loss: not reached"
    return f"the best control {key}'s loss {loss:.4f} {result.rungs[gate.rung] / reach:.2f}× sooner"


def control_lines(result: RaceResult) -> list[str]:
    """For the winner's control (`--control`): did the growth pay, or the trainable set?
    Compared at the last rung both were measured at (the race's own numbers)."""
    win = next((r for r in result.rows if r.key == result.winner), None)
    if win is None:
        return []
    out: list[str] = []
    for ctl in (r for r in result.rows if r.controls is not None and win.key in r.controls):
        both = [
            (i, w, c)
            for i, (w, c) in enumerate(zip(win.rung_losses, ctl.rung_losses, strict=True))
            if w is not None and c is not None
        ]
        if not both:
            continue
        rung, w, c = both[-1]
        what = "the growth pays" if w < c else "the reduced trainable set explains it"
        out.append(
            f"control {ctl.key} (the winner's trainable set, no growth): {c:.4f} vs the "
            f"winner's {w:.4f} at rung {rung + 1}: {what}"
        )
    return out
