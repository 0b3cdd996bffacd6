"""The guarded JSON reader: depth bounded before parsing, size capped, special files refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from growcockpit.protocol.rundir import RunDirError, read_status
from growcockpit.text import safe_json
from growcockpit.text.safe_json import JsonFileError, loads, read_json, too_deep

LEAVES = st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab', max_size=6)
VALUES = st.recursive(
    LEAVES,
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3)
    ),
)


def depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(VALUES, st.integers(min_value=1, max_value=6))
def test_too_deep_agrees_with_the_real_depth(value: object, limit: int) -> None:
    text = json.dumps(value)
    assert too_deep(text, limit) == (depth(value) > limit)
    if depth(value) <= limit:
        assert loads(text, "x", "fix", limit) == value


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200) | st.text(alphabet='[]{}"\\,:1 ', max_size=200))
def test_any_input_is_a_value_or_one_line(data: bytes | str) -> None:
    try:
        loads(data, "f.json", "write it again")
    except JsonFileError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("f.json: ")


@pytest.mark.parametrize(
    "data",
    [b"[" * 100_000 + b"]" * 100_000, b"[" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000],
    ids=["balanced", "unclosed", "objects"],
)
def test_hostile_nesting_is_one_line(data: bytes) -> None:
    with pytest.raises(JsonFileError, match=r"nested more than 64 levels deep\); fix it$"):
        loads(data, "where", "fix it")


def test_brackets_inside_strings_do_not_count() -> None:
    assert loads('{"a": "' + "[" * 1000 + '"}', "w", "f") == {"a": "[" * 1000}


def test_a_fifo_is_refused_without_opening_it(tmp_path: Path) -> None:
    fifo = tmp_path / "state.json"
    os.mkfifo(fifo)
    with pytest.raises(JsonFileError, match=f"{fifo} is not a regular file; save again"):
        read_json(fifo, "save again")


def test_size_cap_and_missing(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text("[" + "1," * 100 + "1]")
    with pytest.raises(JsonFileError, match="over the 10-byte limit"):
        read_json(big, "fix", limit=10)
    with pytest.raises(JsonFileError, match="is missing"):
        read_json(tmp_path / "nope.json", "fix")
    with pytest.raises(JsonFileError, match="not an object"):
        safe_json.read_object(big, "fix")


def test_status_json_nested_deep_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "status.json").write_bytes(b"[" * 300_000 + b"]" * 300_000)
    with pytest.raises(RunDirError, match="status.json: not valid JSON .nested more than 64"):
        read_status(tmp_path)


def test_hostile_event_lines_are_skipped(tmp_path: Path) -> None:
    """The event log readers keep their own line parsers; a deep line is skipped by each."""
    from growcockpit.protocol.crash_reason import crash_reason
    from growcockpit.protocol.event_codec import decode_event
    from growcockpit.protocol.eventlog import _seq_of
    from growcockpit.protocol.rundir import RunPaths
    from growcockpit.session import attach_index

    deep = b"[" * 200_000 + b"]" * 200_000
    with pytest.raises(ValueError, match="nested too deeply"):
        decode_event(deep)
    assert _seq_of(deep) is None
    (tmp_path / "events.jsonl").write_bytes(deep + b"\n")
    assert "\n" not in crash_reason(RunPaths(tmp_path))
    (tmp_path / attach_index.INDEX_NAME).write_bytes(deep)
    assert attach_index.load(tmp_path, tmp_path / "events.jsonl") is None


def test_unterminated_strings_cost_linear_time() -> None:
    """An opening quote followed by escaped quotes and no closing one made the string
    pattern retry from every quote (quadratic: 40 KB took 19 s, a 1 MB race journal line
    hours). 10x the input must cost about 10x (quadratic would be 100x); a ratio of two
    timings in one run, so a loaded machine slows both alike."""
    import time

    from growcockpit.plan.source_files import json_depth
    from growcockpit.race.journal import check_line

    seconds = []
    for n in (4_000, 40_000):
        text = '[[ "' + '\\"' * n
        started = time.perf_counter()
        assert json_depth(text) == 2 and too_deep(text, 1)
        assert check_line(text.encode())[0] is None
        seconds.append(time.perf_counter() - started)
    assert seconds[1] < 40 * max(seconds[0], 1e-3), seconds
