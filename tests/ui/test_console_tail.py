"""The console pane's tail of backend.log: bounded, follows appends, truncation and
replacement, safe against a hostile run directory. No Textual."""

from __future__ import annotations

import os
from pathlib import Path

from growcockpit.session.console_tail import ConsoleTail, clean_line


def _texts(tail: ConsoleTail, since: int = 0) -> list[str]:
    return [ln.text for ln in tail.since(since)]


def test_follows_appends_and_holds_a_partial_line(tmp_path: Path) -> None:
    log = tmp_path / "backend.log"
    tail = ConsoleTail(log)
    assert tail.poll() == 0 and tail.problem == ""  # not there yet: nothing, no complaint
    log.write_bytes(b"starting\nstep 1")
    assert tail.poll() == 1 and _texts(tail) == ["starting"]
    with log.open("ab") as fh:
        fh.write(b" done\nstep 2\n")
    assert tail.poll() == 2
    assert _texts(tail) == ["starting", "step 1 done", "step 2"]
    assert _texts(tail, 2) == ["step 2"] and tail.total == 3
    assert tail.poll() == 0


def test_bounded_memory_and_big_logs(tmp_path: Path) -> None:
    log = tmp_path / "backend.log"
    log.write_bytes(b"".join(b"line %d\n" % i for i in range(10_000)))
    tail = ConsoleTail(log, max_lines=100, first_read=1000)
    tail.poll()
    shown = _texts(tail)
    assert len(shown) <= 100 and shown[-1] == "line 9999"
    assert not any(s.startswith("ine") for s in shown)  # the cut first line is dropped
    with log.open("ab") as fh:
        fh.write(b"x" * 50 + b"\n")
        fh.write(b"".join(b"burst %d\n" % i for i in range(5000)))
    small = ConsoleTail(log, max_lines=50, first_read=10, max_read=2000)
    small.poll()
    with log.open("ab") as fh:
        fh.write(b"".join(b"more %d\n" % i for i in range(2000)))
    small.poll()
    shown = _texts(small)
    assert len(shown) == 50 and shown[-1] == "more 1999"


def test_skip_ahead_is_said(tmp_path: Path) -> None:
    log = tmp_path / "backend.log"
    log.write_bytes(b"a\n")
    tail = ConsoleTail(log, max_read=100)
    tail.poll()
    with log.open("ab") as fh:
        fh.write(b"".join(b"row %03d\n" % i for i in range(100)))
    tail.poll()
    shown = _texts(tail)
    assert shown[0] == "a" and "bytes skipped" in shown[1] and shown[-1] == "row 099"
    assert len(shown) < 20  # only about max_read bytes were read


def test_truncation_and_replacement(tmp_path: Path) -> None:
    log = tmp_path / "backend.log"
    log.write_bytes(b"first run\nold line\n")
    tail = ConsoleTail(log)
    tail.poll()
    log.write_bytes(b"resumed\n")  # truncated in place, shorter than the offset
    tail.poll()
    assert _texts(tail)[-2:] == [
        "── backend.log was truncated: reading it from the start ──",
        "resumed",
    ]
    new = tmp_path / "new.log"
    new.write_bytes(b"replacement\n")
    os.replace(new, log)
    tail.poll()
    assert "was replaced" in _texts(tail)[-2] and _texts(tail)[-1] == "replacement"
    assert tail.restarts == 2
    log.unlink()
    tail.poll()
    log.write_bytes(b"again\n")
    tail.poll()
    assert _texts(tail)[-1] == "again" and tail.restarts == 3


def test_hostile_log_is_refused_once_and_never_blocks(tmp_path: Path) -> None:
    log = tmp_path / "backend.log"
    secret = tmp_path / "secret"
    secret.write_bytes(b"password\n")
    log.symlink_to(secret)
    tail = ConsoleTail(log)
    assert tail.poll() == 1 and tail.poll() == 0  # said once
    assert "symbolic link" in tail.problem and "password" not in " ".join(_texts(tail))
    log.unlink()
    os.mkfifo(log)
    tail.poll()  # a FIFO with no writer would block a plain open
    assert "FIFO" in tail.problem
    log.unlink()
    log.write_bytes(b"fine\n")
    tail.poll()
    assert tail.problem == "" and _texts(tail)[-1] == "fine"


def test_clean_line() -> None:
    assert clean_line(b"\x1b[31mred\x1b[0m text") == "red text"
    assert clean_line(b" 10%|#   |\r 50%|##  |\r100%|####|") == "100%|####|"
    assert clean_line(b"crlf\r") == "crlf"
    assert clean_line(b"\x1b]0;title\x07bell \x07 and \xff") == "bell \\x07 and \ufffd"
    assert clean_line(b"x" * 50, max_chars=10) == "x" * 9 + "…"
    assert clean_line(b"bidi \xe2\x80\xae") == "bidi \\u202e"


def test_an_absent_log_says_where_the_output_goes(tmp_path: Path) -> None:
    """A foreground `train` writes no backend.log: the Console tab was empty, with no hint."""
    tail = ConsoleTail(tmp_path / "backend.log")
    assert tail.poll() == 0 and tail.absent
    (tmp_path / "backend.log").write_text("step 1\n")
    assert tail.poll() == 1 and not tail.absent
