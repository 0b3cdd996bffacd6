"""Races: candidate plans trained on a short prefix of their budget, cut by successive
halving at equal compute, the winner continued to the full budget.

Knows plan, protocol and compare, and Optuna for the shared study; never torch or
Textual: candidates train as `python -m growcockpit` subprocesses.
"""

from growcockpit.race.candidates import Candidate, RaceError, RaceSpec, build_race
from growcockpit.race.halving import cut, ranked, rung_computes, rung_counts, value_at

__all__ = [
    "Candidate",
    "RaceError",
    "RaceSpec",
    "build_race",
    "cut",
    "ranked",
    "rung_computes",
    "rung_counts",
    "value_at",
]
