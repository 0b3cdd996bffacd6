"""A tie is a tie: identical scores are kept together and never make a winner by name."""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

from growcockpit.race.candidates import Candidate, RaceSpec
from growcockpit.race.halving import best_tied, cut
from growcockpit.race.report import format_result, race_result
from growcockpit.race.study import KEY


def test_a_tie_at_the_boundary_goes_on_whole_whatever_the_names() -> None:
    """The case seen: two prefixes scored 5.9795 each, and the argument order cut one."""
    assert cut({"b-late": 5.9795, "a-late": 5.9795, "base": 6.2}, 2, 1) == ["a-late", "b-late"]
    assert cut({"z": 5.9795, "a": 5.9795, "m": 6.2}, 2, 1) == ["a", "z"]
    assert cut({"x": 1.0, "y": 1.0 + 1e-12, "z": 1.0000001}, 3, 1) == ["x", "y"]
    assert cut({"x": 1.0, "y": 2.0, "z": 2.0, "w": 3.0}, 2, 1) == ["x", "y", "z"]
    assert cut({"x": 1.0, "y": 2.0, "z": 3.0, "w": 3.0}, 2, 1) == ["x", "y"]  # none at the edge
    assert cut({"x": float("nan"), "y": float("nan"), "z": 1.0}, 3, 1) == ["z"]
    assert best_tied({"x": 2.0, "y": 1.0, "z": 1.0}) == ["y", "z"]


def _spec(keys: list[str]) -> RaceSpec:
    cands = [
        Candidate(k, k, [], k == "base", [f"/nowhere/{k}.toml"], [f"/nowhere/{k}"]) for k in keys
    ]
    return RaceSpec(cands, [0], 2, 1, 0.5, 100.0, [25.0, 50.0])


def _study(rungs: dict[str, list[float]], finals: dict[str, float] | None = None) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize")
    for key, values in rungs.items():
        trial = study.ask()
        trial.set_user_attr(KEY, key)
        for rung, value in enumerate(values):
            trial.report(value, step=rung)
        if len(values) < 2:
            study.tell(trial.number, state=TrialState.PRUNED)
        elif finals is not None and key in finals:
            study.tell(trial.number, finals[key])
    return study


def test_a_tie_at_the_last_rung_has_no_winner_and_claims_no_speedup() -> None:
    rungs = {"base": [6.30, 6.10], "late-a": [6.00, 5.9795], "late-b": [6.00, 5.9795]}
    result = race_result(_spec(list(rungs)), _study(rungs))
    assert result.winner is None and result.speedup is None
    assert result.tied == ["late-a", "late-b"]
    text = format_result(result)
    assert "tied at the last rung: late-a, late-b" in text and "sooner" not in text


def test_the_full_budget_breaks_a_tie() -> None:
    rungs = {"base": [6.30, 6.10], "late-a": [6.00, 5.9795], "late-b": [6.00, 5.9795]}
    result = race_result(_spec(list(rungs)), _study(rungs, {"late-a": 5.50, "late-b": 5.41}))
    assert result.winner == "late-b" and result.tied == []
    same = race_result(_spec(list(rungs)), _study(rungs, {"late-a": 5.5, "late-b": 5.5}))
    assert same.winner is None and same.tied == ["late-a", "late-b"]
    assert "no winner, no speedup" in format_result(same)
