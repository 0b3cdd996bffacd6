"""What the cockpit shows of a race, without Textual: a race directory folded into a view.

A race directory (`growcockpit race`) holds its description (`race.json`), its Optuna
study (rung values, cuts) and one ordinary run directory per candidate and seed. The
race's own report (growcockpit.race.report) turns the first two into rows and a
verdict; this module adds what a screen needs on top: each candidate's curve (its
first seed's evaluations against FLOPs and training time, as `compare` measures them),
the leader so far, how many rungs are complete, whether a worker is in the race, and
the two things a user can ask of it: stop, or continue the winner to the full budget.
Everything is read from disk, so a race started elsewhere, or before the cockpit was
opened, reads the same as one started from it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from growcockpit.compare import load_progress
from growcockpit.protocol.launch import spawn_backend
from growcockpit.protocol.safe_fs import RunDirError
from growcockpit.race.candidates import SPEC_FILE, RaceSpec
from growcockpit.race.halving import ranked
from growcockpit.race.presence import race_live, request_stop, stop_requested
from growcockpit.race.race_dir import RaceDirError
from growcockpit.race.spec_file import load_spec
from growcockpit.race.trust import caveat

if TYPE_CHECKING:  # the report and the study import Optuna: only when a race is read
    from growcockpit.race.report import Row

STUDY_FILE = "study.journal"  # growcockpit.race.study.STUDY_FILE (checked by a test)

RACES_DIR = "races"
RaceStatus = Literal["live", "stopping", "stopped", "picked", "finished", "unfinished"]


@dataclass(frozen=True)
class CurvePoint:
    """One evaluation: cumulative estimated FLOPs, training seconds, validation loss."""

    flops: float
    wall_s: float
    loss: float


@dataclass(frozen=True)
class CandidateView:
    key: str
    baseline: bool
    control: bool
    state: str  # racing | cut | winner | finished | failed | stopping | stopped
    cut_at: int | None  # 0-based rung
    rung_losses: list[float | None]
    flops: float
    final_loss: float | None
    leader: bool
    runs: list[Path]
    curve: list[CurvePoint] = field(default_factory=list)

    @property
    def is_cut(self) -> bool:
        return self.state == "cut"


@dataclass(frozen=True)
class RaceView:
    path: Path
    status: RaceStatus
    rungs: list[float]
    budget_flops: float
    budget_fraction: float
    race_flops: float
    candidates: list[CandidateView]
    winner: str | None
    leader: str | None
    rungs_done: int
    verdict: list[str]
    caveat: str | None
    finish: bool  # the race continues its winner itself

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def can_stop(self) -> bool:
        return self.status == "live"

    @property
    def can_continue(self) -> bool:
        """Continue the winner: nobody works on the race and the winner is not done yet."""
        return self.status in ("stopped", "picked", "unfinished")


def continue_text(view: RaceView) -> str:
    """What `c` starts, asked before it starts: the rest of the race and its winner's
    training to the full budget, with how much compute that is and, at the rate the
    candidates trained so far on this machine, about how long."""
    done = max((c.flops for c in view.candidates), default=0.0)
    left = max(0.0, view.budget_flops - done)
    points = [p for c in view.candidates for p in c.curve[-1:] if p.flops > 0]
    share = f"about {left / view.budget_flops:.0%} of one full run" if view.budget_flops else ""
    if points:
        rate = max(points, key=lambda p: p.flops)
        minutes = left * rate.wall_s / rate.flops / 60
        eta = f", ≈ {minutes:,.0f} min at the rate measured so far" if minutes >= 1 else ""
    else:
        eta = ", time unknown until a candidate has evaluated"
    return (
        "Continue in the background: the race's remaining rungs, then its winner trains to "
        f"the full budget ({share}{eta}). Its log is written under the race directory; "
        "s stops it."
    )


class RaceReadError(Exception):
    """A directory that is not a readable race: one line naming it and why."""


def leader_of(rows: list[Row]) -> str | None:
    """The winner once there is one; before, the best at the furthest rung where two or
    more candidates not cut have a value: one value alone leads nothing (None then)."""
    winners = [r.key for r in rows if r.state in ("winner", "finished")]
    if winners:
        return winners[0]
    measured = {i for r in rows for i, v in enumerate(r.rung_losses) if v is not None}
    for top in sorted(measured, reverse=True):
        values = {
            r.key: r.rung_losses[top]
            for r in rows
            if r.rung_losses[top] is not None and r.state not in ("cut", "failed")
        }
        if len(values) >= 2:
            return ranked(values)[0]
    return None


def shown_state(state: str, status: RaceStatus) -> str:
    """A candidate's word: one still "racing" in a race stopped (or stopping) says so."""
    if state == "racing" and status in ("stopped", "stopping"):
        return status
    return state


def rungs_done(rows: list[Row], rungs: int) -> int:
    """How many rungs every candidate still in the race at that rung has reported."""
    done = 0
    for r in range(rungs):
        needed = [row for row in rows if row.cut_at is None or row.cut_at >= r]
        if not needed or any(row.rung_losses[r] is None for row in needed):
            break
        done += 1
    return done


def status_of(live: bool, stopping: bool, rows: list[Row], finish: bool) -> RaceStatus:
    if live:
        return "stopping" if stopping else "live"
    if stopping:
        return "stopped"
    states = {r.state for r in rows}
    if "finished" in states and "winner" not in states:
        return "finished"
    if "winner" in states:
        return "picked"
    return "unfinished"


def curve_of(run_dir: Path) -> list[CurvePoint]:
    """A run's evaluations with known FLOPs (empty while it has none, or unreadable)."""
    try:
        prog = load_progress(run_dir)
    except (OSError, RunDirError):  # a link or FIFO planted in the run: no curve drawn
        return []
    return [CurvePoint(e.flops, e.wall_s, e.val_loss) for e in prog.evals if e.flops is not None]


def read_spec(race_dir: Path) -> RaceSpec:
    """race.json as the race itself reads it (untrusted: checked, paths derived)."""
    try:
        spec = load_spec(race_dir)
    except RaceDirError as exc:
        raise RaceReadError(f"{race_dir}: not a readable race ({exc})") from None
    if spec is None:
        raise RaceReadError(f"{race_dir}: not a readable race (no {SPEC_FILE})")
    return spec


def load_race_view(race_dir: Path, *, curves: bool = True) -> RaceView:
    """The race as it stands on disk; `curves=False` skips the candidates' curves (Home)."""
    from growcockpit.race.report import (
        Row,
        control_lines,
        gate_lines,
        race_result,
        verdict_line,
    )
    from growcockpit.race.study import open_study

    race_dir = Path(race_dir)
    spec = read_spec(race_dir)
    if not (race_dir / STUDY_FILE).exists():  # built, no worker has opened it yet
        rows = [
            Row(
                c.key,
                c.baseline,
                c.sets,
                [None] * len(spec.rungs),
                0.0,
                0.0,
                None,
                "racing",
                None,
                c.runs,
                c.controls if c.control else None,
                c.depth,
            )  # fmt: skip
            for c in spec.candidates
        ]
        result = None
    else:
        try:
            result = race_result(spec, open_study(race_dir))
        except RaceDirError as exc:  # a planted or damaged study.journal
            raise RaceReadError(f"{race_dir}: not a readable race ({exc})") from None
        rows = result.rows
    leader = leader_of(rows)
    status = status_of(race_live(race_dir), stop_requested(race_dir), rows, spec.finish)
    views = [
        CandidateView(
            r.key,
            r.baseline,
            r.controls is not None,
            shown_state(r.state, status),
            r.cut_at,
            r.rung_losses,
            r.flops,
            r.final_loss,
            r.key == leader,
            [Path(p) for p in r.runs],
            curve_of(Path(r.runs[0])) if curves and r.runs else [],
        )  # fmt: skip
        for r in rows
    ]
    verdict = (
        [verdict_line(result), *control_lines(result), *gate_lines(result)]
        if result
        else ["not started yet"]
    )
    return RaceView(
        race_dir,
        status,
        spec.rungs,
        spec.budget_flops,
        spec.budget_fraction,
        result.race_flops if result else 0.0,
        views,
        result.winner if result else None,
        leader,
        rungs_done(rows, len(spec.rungs)),
        verdict,
        caveat(spec.budget_fraction),
        spec.finish,
    )


@dataclass(frozen=True)
class RaceEntry:
    """One race in Home's list."""

    path: Path
    status: str
    candidates: int
    rungs: str  # "1/3"
    leader: str
    updated: float
    problem: str = ""


def list_races(root: Path) -> list[RaceEntry]:
    """The race directories under `root` (those with a race.json), newest first."""
    try:
        dirs = [d for d in Path(root).iterdir() if (d / SPEC_FILE).is_file()]
    except OSError:
        return []
    out = []
    for d in dirs:
        try:
            updated = max(os.stat(p).st_mtime for p in (d / SPEC_FILE, d) if p.exists())
            if (d / STUDY_FILE).exists():
                updated = max(updated, (d / STUDY_FILE).stat().st_mtime)
        except OSError:
            updated = 0.0
        try:
            v = load_race_view(d, curves=False)
        except RaceReadError as exc:
            out.append(RaceEntry(d, "unreadable", 0, "", "", updated, str(exc)))
            continue
        out.append(
            RaceEntry(
                d,
                v.status,
                len(v.candidates),
                f"{v.rungs_done}/{len(v.rungs)}",
                v.leader or "",
                updated,
            )  # fmt: skip
        )
    out.sort(key=lambda e: (e.status not in ("live", "stopping"), -e.updated, e.path.name))
    return out


def stop_race(race_dir: Path) -> None:
    """Ask the race to stop: its workers stop the run they train (a checkpoint) and leave."""
    request_stop(Path(race_dir))


def continue_race(race_dir: Path, python: str | None = None) -> Path:
    """Go on with the race in the background (surviving the cockpit): its missing rungs,
    then the winner(s) to the full budget. The race's log file is returned."""
    log = Path(race_dir) / "logs" / "race.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = ["race", "--race-dir", str(race_dir), "--continue-winner"]
    spawn_backend(argv, log, python=python, new_session=True)
    return log
