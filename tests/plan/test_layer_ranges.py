"""One way to write layer ids as ranges, for `plan show`, the designer and the cockpit."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from growcockpit.plan.show import format_ids, layer_ranges


def parse(text: str, sep: str) -> set[int]:
    out: set[int] = set()
    for part in filter(None, text.split(sep)):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def test_examples() -> None:
    assert layer_ranges([5, 0, 2, 1]) == "0-2, 5"
    assert layer_ranges([]) == ""
    assert format_ids([0, 1, 2, 5]) == "0-2,5" and format_ids([]) == "-"
    assert layer_ranges([3]) == "3" and layer_ranges([3, 4]) == "3-4"


@given(st.sets(st.integers(0, 200), max_size=60))
def test_ranges_read_back_to_the_same_ids_in_fewest_runs(ids: set[int]) -> None:
    text = layer_ranges(ids)
    assert parse(text, ", ") == ids
    runs = sum(1 for i in ids if i - 1 not in ids)
    assert len(text.split(", ")) == runs if ids else text == ""
    if ids:
        assert parse(format_ids(sorted(ids)), ",") == ids
