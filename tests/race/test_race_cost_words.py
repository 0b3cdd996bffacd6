""" "Counting the race's own compute: 0.34×" said in words a user can act on.

The bare ratio read as "the winner is 3× slower". It is the speedup once the search is
paid for: the baseline's compute to its loss over everything the race trained to find
the winner (the other candidates' compute plus the winner's way to that loss).
"""

from __future__ import annotations

from growcockpit.race.halving import Speedup
from growcockpit.race.report import RaceResult, Row, race_cost_text, verdict_line


def _result(race_flops: float) -> RaceResult:
    rows = [
        Row("grow", False, [], [4.0], 10.0, 10.0, None, "winner", None, ["r/grow"]),
        Row("base", True, [], [4.2], 10.0, 10.0, 0, "cut", None, ["r/base"]),
    ]
    speedup = Speedup(4.0, baseline_flops=30.0, winner_flops=10.0, race_flops=race_flops,
                      winner_race_flops=10.0)  # fmt: skip
    return RaceResult([10.0], 30.0, rows, race_flops, "grow", speedup)


def test_a_race_that_cost_more_than_it_saved_says_what_it_cost() -> None:
    result = _result(race_flops=88.2)  # with the race: 30 / (88.2 - 10 + 10) = 0.34
    line = verdict_line(result)
    assert "3.00× sooner" in line  # the plan against the baseline, candidate to candidate
    assert "0.34×, i.e. finding this plan cost 2.9× the baseline's compute to that loss" in line
    assert "pays off only when the winning plan is trained again" in line
    assert "what every other candidate trained, plus the winner's way to that loss" in line


def test_a_race_that_paid_for_itself_says_so() -> None:
    assert "1.50× sooner still, so the race paid for itself" in verdict_line(_result(20.0))
    assert race_cost_text(None).endswith("not known yet")
