"""The race's shared state in an Optuna study, and the loop every worker runs.

One Optuna trial per candidate, in a journal file in the race directory
(`study.journal`): a rung's value is the trial's intermediate value at step = rung
index, a cut candidate's trial is PRUNED, a winner's trial COMPLETE with its final
loss. Every worker (`--workers N`, or `growcockpit race --join DIR` on another
machine sharing the directory) runs `work`: it claims a candidate with an exclusive
file lock, trains it to the rung, reports, and moves on; once every candidate still
in the race has reported at a rung, the cut is the pure `halving.cut` over the stored
values, so all workers agree on it. A killed worker's lock goes with it and its
candidate's run is resumed from its checkpoint by whoever takes it next, so a race
that is killed and started again goes on where it was.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import optuna
from optuna.storages import JournalStorage
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from growcockpit.race.candidates import Candidate, RaceSpec
from growcockpit.race.halving import cut, value_at
from growcockpit.race.journal import JournalError, RaceJournal, replay_errors, way_out
from growcockpit.race.presence import RaceStopped, open_lock, stop_requested, worker_presence
from growcockpit.race.race_dir import JOURNAL_FILE
from growcockpit.race.runs import RunState, advance_run, billed_flops, run_state
from growcockpit.race.supervise import stop_orphan

STUDY_FILE = JOURNAL_FILE
STUDY_NAME = "race"
WAIT_S = 1.0
KEY = "candidate"

Say = Callable[[str], None]


def open_study(race_dir: Path) -> optuna.Study:
    """The race's study, created on first use (every worker opens the same file); a journal
    that Optuna's replay cannot use is one JournalError, never a traceback."""
    optuna.logging.set_verbosity(logging.WARNING)
    journal = RaceJournal(race_dir)
    try:
        study = optuna.create_study(
            study_name=STUDY_NAME,
            storage=JournalStorage(journal),
            direction="minimize",
            load_if_exists=True,
        )
        if study.direction != StudyDirection.MINIMIZE:
            raise ValueError(f"study {STUDY_NAME!r} does not minimize")
    except (ValueError, KeyError, TypeError, RuntimeError, AssertionError) as exc:
        raise JournalError(
            f"{journal.path}: Optuna cannot replay it ({str(exc)[:80]}); {way_out(journal.path)}"
        ) from None
    return study


def drop_torn_tail(race_dir: Path) -> str | None:
    """A crash's torn last journal line cut (the line saying so), before the race reads it."""
    return RaceJournal(race_dir).drop_torn_tail()


@contextlib.contextmanager
def _locked(race_dir: Path, name: str, *, wait: bool) -> Iterator[bool]:
    """An exclusive flock on `<race>/locks/<name>`: yields whether it was taken (at once,
    unless `wait`)."""
    fd = open_lock(race_dir, name)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def trials_by_key(study: optuna.Study) -> dict[str, FrozenTrial]:
    """Each candidate's trial; a second trial claiming a candidate is refused, not taken
    over (the journal was edited, or two races wrote it)."""
    out: dict[str, FrozenTrial] = {}
    for t in study.get_trials():
        if KEY not in t.user_attrs:
            continue  # a worker killed between making a trial and naming it
        key = t.user_attrs[KEY]
        if not isinstance(key, str):
            raise JournalError(
                f"{STUDY_FILE}: trial {t.number} claims candidate {str(key)[:40]!r}, not a "
                f"key; {way_out(STUDY_FILE)}"
            )
        if key in out:
            raise JournalError(
                f"{STUDY_FILE}: trials {out[key].number} and {t.number} both claim candidate "
                f"{key!r}; {way_out(STUDY_FILE)}"
            )
        out[key] = t
    return out


def ensure_trials(study: optuna.Study, spec: RaceSpec, race_dir: Path) -> None:
    """One trial per candidate, made once (under the race lock, whoever comes first)."""
    with _locked(race_dir, "race.lock", wait=True):
        have = trials_by_key(study)
        for c in spec.candidates:
            if c.key not in have:
                trial = study.ask()
                trial.set_user_attr(KEY, c.key)
                trial.set_user_attr("baseline", c.baseline)
                trial.set_user_attr("sets", c.sets)


def _rung_value(c: Candidate, states: list[RunState], compute: float) -> float:
    """The candidate's loss at `compute`: the mean over its seeds' runs (NaN if any is unknown)."""
    values = [value_at(s.points, compute, finished=s.completed) for s in states]
    if any(v is None or math.isnan(v) for v in values):
        return math.nan
    return sum(v for v in values if v is not None) / len(values)


def _train(spec: RaceSpec, c: Candidate, target: float | None, race_dir: Path) -> list[RunState]:
    """Every seed's run to `target`; RaceStopped, nothing reported, if a stop was asked."""
    states = []
    for run, plan in zip(c.runs, c.plan_files, strict=True):
        if stop_requested(race_dir):
            raise RaceStopped(c.key)
        states.append(advance_run(Path(run), Path(plan), target, lambda: stop_requested(race_dir)))
    if stop_requested(race_dir):  # a run stopped short of its rung: not a measurement
        raise RaceStopped(c.key)
    return states


def live_at(spec: RaceSpec, study: optuna.Study, rung: int) -> list[str]:
    """The candidates measured at `rung`: all at rung 0, then the cut of the one before.
    None while the rung before is incomplete."""
    keys = [c.key for c in spec.candidates]
    trials = trials_by_key(study)
    for r in range(rung):
        values = {k: trials[k].intermediate_values.get(r) for k in keys}
        if any(v is None for v in values.values()):
            raise LookupError(r)
        keys = cut(values, spec.eta, spec.keep)
    return keys


def _apply_cut(study: optuna.Study, spec: RaceSpec, rung: int, race_dir: Path) -> list[str]:
    """The survivors of `rung`; the others' trials marked PRUNED (once, whoever is first)."""
    live = live_at(spec, study, rung)
    trials = trials_by_key(study)
    values = {k: trials[k].intermediate_values.get(rung) for k in live}
    winners = cut(values, spec.eta, spec.keep)
    with _locked(race_dir, "race.lock", wait=True):
        for key, trial in trials_by_key(study).items():
            if key in live and key not in winners and trial.state == TrialState.RUNNING:
                study.tell(trial.number, state=TrialState.PRUNED)
    return winners


def _claim_loop(
    study: optuna.Study,
    spec: RaceSpec,
    race_dir: Path,
    keys: list[str],
    done: Callable[[FrozenTrial], bool],
    step: Callable[[Candidate, optuna.trial.Trial], None],
) -> None:
    """Work on `keys` until every one is `done`: take a free one, `step` it, repeat; when
    all the rest are taken by other workers, wait for them (or for their locks to free)."""
    by_key = {c.key: c for c in spec.candidates}
    while True:
        if stop_requested(race_dir):
            raise RaceStopped()
        trials = trials_by_key(study)
        pending = [k for k in keys if not done(trials[k])]
        if not pending:
            return
        took = False
        for key in pending:
            with _locked(race_dir, f"{key}.lock", wait=False) as mine:
                if not mine:
                    continue
                trial = trials_by_key(study)[key]
                if done(trial):
                    continue
                step(by_key[key], optuna.trial.Trial(study, trial._trial_id))
                took = True
        if not took:
            time.sleep(WAIT_S)


def stop_orphans(spec: RaceSpec, race_dir: Path, say: Say) -> None:
    """Stop every backend a killed race left training (supervise.py), for the candidates
    no live worker holds: their lock is free."""
    for c in spec.candidates:
        with _locked(race_dir, f"{c.key}.lock", wait=False) as mine:
            if mine:
                for run in c.runs:
                    stop_orphan(Path(run), say)


def work(spec: RaceSpec, race_dir: Path, say: Say = print) -> None:
    """One worker's share of the race: every rung, then the winners to the full budget.
    RaceStopped once the race is asked to stop (presence.py); the worker is seen in the
    race (presence.race_live) while it works."""
    with worker_presence(race_dir), replay_errors(race_dir / STUDY_FILE):
        _work(spec, race_dir, say)


def _work(spec: RaceSpec, race_dir: Path, say: Say) -> None:
    torn = drop_torn_tail(race_dir)
    if torn is not None:
        say(torn)
    study = open_study(race_dir)
    ensure_trials(study, spec, race_dir)
    stop_orphans(spec, race_dir, say)
    for rung, compute in enumerate(spec.rungs):
        live = live_at(spec, study, rung)

        def report(c: Candidate, trial: optuna.trial.Trial, rung: int = rung) -> None:
            states = _train(spec, c, spec.rungs[rung], race_dir)
            value = _rung_value(c, states, spec.rungs[rung])
            billed = sum(billed_flops(s, spec.rungs[rung]) for s in states)
            trial.set_user_attr(f"flops_{rung}", billed)
            trial.report(value, step=rung)
            say(f"rung {rung + 1}/{len(spec.rungs)}  {c.key}: val loss {value:.4f}")

        def measured(t: FrozenTrial, rung: int = rung) -> bool:
            return rung in t.intermediate_values

        _claim_loop(study, spec, race_dir, live, measured, report)
        winners = _apply_cut(study, spec, rung, race_dir)
        say(
            f"rung {rung + 1}/{len(spec.rungs)} at {compute:.3g} FLOPs: going on: {', '.join(winners)}"
        )
    if not spec.finish:
        return
    winners = _apply_cut(study, spec, len(spec.rungs) - 1, race_dir)

    def finish(c: Candidate, trial: optuna.trial.Trial) -> None:
        states = _train(spec, c, None, race_dir)
        finals = [s.points[-1].loss if s.points else math.nan for s in states]
        say(f"full budget  {c.key}: final val loss {sum(finals) / len(finals):.4f}")
        if all(s.completed for s in states):
            study.tell(trial.number, sum(finals) / len(finals))
        else:  # a run that crashed: said in the result, not retried forever
            study.tell(trial.number, state=TrialState.FAIL)

    _claim_loop(study, spec, race_dir, winners, lambda t: t.state != TrialState.RUNNING, finish)


def states_of(c: Candidate) -> list[RunState]:
    return [run_state(Path(run)) for run in c.runs]
