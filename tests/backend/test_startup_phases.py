"""The start-up phase events: each phase from launch to the first step, with its seconds,
and the first step reported at once whatever `log_every_steps` says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from run_fixtures import make_trainer, tiny_plan

from growcockpit.backend.control.startup_phases import StartupClock, launch_time
from growcockpit.protocol import read_all
from growcockpit.protocol.events import Event, StartupPhase, Step


def phases(events: list[Event]) -> list[tuple[str, bool]]:
    return [(e.phase, e.done) for e in events if isinstance(e, StartupPhase)]


@pytest.mark.usefixtures("gc_cache")
def test_the_engine_reports_its_phases_and_the_first_step_at_once(tmp_path: Path) -> None:
    text = re.sub(r"^eval_every_steps = 10$", "log_every_steps = 4", tiny_plan((6, 5)), flags=re.M)
    trainer = make_trainer(tmp_path, text)
    assert trainer.run() == "completed"
    events = read_all(tmp_path / "events.jsonl")
    expected = ["model", "checkpoint", "optimizer", "first_step"]
    assert phases(events) == [(name, done) for name in expected for done in (False, True)]
    ended = [e for e in events if isinstance(e, StartupPhase) and e.done]
    assert all(e.seconds is not None and e.seconds >= 0 for e in ended)
    launched = [e.since_launch for e in events if isinstance(e, StartupPhase)]
    assert launched == sorted(launched)
    steps = [e for e in events if isinstance(e, Step)]
    assert [s.step for s in steps] == [1, 4, 6, 8, 11]  # step 1 at once, then the cadence
    first_done = next(i for i, e in enumerate(events) if e is ended[-1])
    assert isinstance(events[first_done - 1], Step) and events[first_done - 1].step == 1


def test_a_phase_that_fails_sends_no_end_and_a_silent_clock_sends_nothing() -> None:
    sent: list[Event] = []
    clock = StartupClock(sent.append)
    with pytest.raises(RuntimeError), clock.phase("token_cache"):
        raise RuntimeError("disk full")
    assert phases(sent) == [("token_cache", False)]
    quiet = StartupClock()
    with quiet.phase("model") as note:
        assert not note.active


def test_launch_time_is_this_process_start() -> None:
    import time

    import psutil

    assert abs(launch_time() - psutil.Process().create_time()) < 1.5
    assert launch_time() <= time.time()


def test_the_console_says_each_ended_phase_and_when_the_first_step_came() -> None:
    from growcockpit.backend.control.sinks import console_line

    began = StartupPhase(phase="token_cache", since_launch=3.0)
    cached = StartupPhase(phase="token_cache", done=True, seconds=0.04, note="from the cache")
    first = StartupPhase(phase="first_step", done=True, seconds=1.5, since_launch=12.34)
    assert console_line(began, 10) is None
    assert console_line(cached, 10) == "   startup: token cache 0.0 s (from the cache)"
    assert console_line(first, 10) == "   startup: first step 1.5 s; first step 12.3 s after launch"
