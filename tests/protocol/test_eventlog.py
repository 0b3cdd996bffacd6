"""EventLog (writer) and EventTail (reader) of events.jsonl."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from growcockpit.protocol import (
    EventLog,
    EventTail,
    Paused,
    Step,
    UnknownEvent,
    encode_event,
    read_all,
)


def _steps(log: EventLog, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        log.append(Step(step=i, loss=1.0 / (i + 1)))


def test_append_assigns_seq_and_time(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventLog(path) as log:
        first = log.append(Step(step=1))
        second = log.append(Paused(step=1, t=123.0))
        assert (first.seq, second.seq) == (1, 2)
        assert first.t > 0 and second.t == 123.0
        assert log.last_seq == 2
    assert log.closed
    raw = path.read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 2
    assert [e.seq for e in read_all(path)] == [1, 2]


def test_seq_continues_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventLog(path) as log:
        _steps(log, 5)
    with EventLog(path) as log:
        assert log.last_seq == 5
        _steps(log, 3)
    seqs = [e.seq for e in read_all(path)]
    assert seqs == list(range(1, 9))


def test_reopen_after_torn_tail_isolates_fragment(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventLog(path) as log:
        _steps(log, 3)
    with path.open("ab") as fh:  # the previous writer died mid-line
        fh.write(encode_event(Step(seq=4, step=99)).encode()[:20])
    with EventLog(path) as log:
        assert log.last_seq == 3
        log.append(Step(step=3))
    tail = EventTail(path)
    assert [e.seq for e in tail.read_new()] == [1, 2, 3, 4]
    assert tail.skipped == 1


def test_seq_found_behind_long_tail_of_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventLog(path) as log:
        _steps(log, 2)
    with path.open("a") as fh:
        fh.write(("x" * 1000 + "\n") * 200)  # > one backward scan chunk
    with EventLog(path) as log:
        assert log.last_seq == 2


def test_torn_last_line_is_not_consumed_until_complete(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventLog(path) as log:
        _steps(log, 2)
    line = encode_event(Step(seq=3, t=1.0, step=2)) + "\n"
    with path.open("a") as fh:
        fh.write(line[:15])
    tail = EventTail(path)
    assert [e.seq for e in tail.read_new()] == [1, 2]
    assert tail.read_new() == []
    assert tail.skipped == 0
    with path.open("a") as fh:
        fh.write(line[15:])
    got = tail.read_new()
    assert [e.seq for e in got] == [3] and isinstance(got[0], Step) and got[0].step == 2
    assert tail.skipped == 0


def test_reader_starting_mid_run(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventLog(path) as log:
        _steps(log, 10)
        tail = EventTail(path)
        assert len(tail.read_new()) == 10
        _steps(log, 4)
        assert [e.seq for e in tail.read_new()] == [11, 12, 13, 14]
        assert tail.read_new() == []
        # a second viewer that attaches at the current end sees only what follows
        late = EventTail(path, start_offset=path.stat().st_size)
        _steps(log, 1)
        assert [e.seq for e in late.read_new()] == [15]
        assert [e.seq for e in tail.read_new()] == [15]


def test_max_events_resumes_where_it_stopped(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventLog(path) as log:
        _steps(log, 10)
    tail = EventTail(path)
    batches = [tail.read_new(max_events=4) for _ in range(4)]
    assert [[e.seq for e in b] for b in batches] == [
        [1, 2, 3, 4],
        [5, 6, 7, 8],
        [9, 10],
        [],
    ]


def test_malformed_and_unknown_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    good = encode_event(Step(seq=1, t=1.0))
    future = json.dumps({"seq": 3, "t": 1.0, "type": "from_the_future"})
    path.write_text(f"{good}\nnot json at all\n\n{future}\n[1]\n")
    tail = EventTail(path)
    events = tail.read_new()
    assert [e.seq for e in events] == [1, 3]
    assert isinstance(events[1], UnknownEvent)
    assert tail.skipped == 2  # the blank line is not an error


def test_missing_file_then_created(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    tail = EventTail(path)
    assert tail.read_new() == []
    assert read_all(path) == []
    with EventLog(path) as log:
        _steps(log, 2)
    assert len(tail.read_new()) == 2


def test_truncation_restarts_from_zero(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventLog(path) as log:
        _steps(log, 5)
    tail = EventTail(path)
    assert len(tail.read_new()) == 5
    path.write_text(encode_event(Step(seq=1, t=1.0, step=42)) + "\n")
    got = tail.read_new()
    assert [(e.seq, getattr(e, "step", None)) for e in got] == [(1, 42)]
    assert tail.resets == 1


def test_replaced_file_restarts_from_zero(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventLog(path) as log:
        _steps(log, 2)
    tail = EventTail(path)
    assert len(tail.read_new()) == 2
    other = tmp_path / "other.jsonl"
    with EventLog(other) as log:
        _steps(log, 4)
    os.replace(other, path)  # bigger than the old offset, but a new file
    assert [e.seq for e in tail.read_new()] == [1, 2, 3, 4]
    assert tail.resets == 1


def test_concurrent_appends(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    per_thread = 300
    with EventLog(path) as log:
        tail = EventTail(path)
        seen: list[int] = []

        def work(k: int) -> None:
            for i in range(per_thread):
                log.append(Step(step=i, stage=k))

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for th in threads:
            th.start()
        while any(th.is_alive() for th in threads):
            seen.extend(e.seq for e in tail.read_new())
        for th in threads:
            th.join()
        seen.extend(e.seq for e in tail.read_new())
    lines = path.read_text().splitlines()
    assert len(lines) == 4 * per_thread
    assert all(json.loads(line)["type"] == "step" for line in lines)
    seqs = [json.loads(line)["seq"] for line in lines]
    assert seqs == list(range(1, 4 * per_thread + 1))  # unique and in file order
    assert seen == seqs and tail.skipped == 0


def test_hundred_thousand_events(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    n = 100_000
    lines = (
        encode_event(Step(seq=i, t=float(i), step=i, loss=1.0, lr=1e-3)) + "\n"
        for i in range(1, n + 1)
    )
    path.write_text("".join(lines))
    tail = EventTail(path)
    events = tail.read_new()
    assert len(events) == n and events[-1].seq == n
    assert tail.offset == path.stat().st_size
    with EventLog(path) as log:  # resuming a long run scans back, not forward
        assert log.last_seq == n
