"""The session's samples: folded from events, cut by a rollback, kept by the attach index,
and the Samples tab's view of them (which evaluation, the empty state)."""

from __future__ import annotations

from pathlib import Path

from growcockpit.protocol import EventLog, RunPaths, read_all
from growcockpit.protocol.events import RolledBack, Step
from growcockpit.protocol.samples_event import Samples, SampleText
from growcockpit.session.attach_index import state_from_dict, state_to_dict
from growcockpit.session.fold.bulk import fold_lines
from growcockpit.session.run_state import RunState
from growcockpit.session.samples_view import HOW_TO_TURN_ON, SamplesView, empty_text


def _samples(step: int, word: str = "king") -> Samples:
    return Samples(step=step, stage=0, kind="causal", samples=[SampleText(prompt="The", text=word)])


def _log(path: Path) -> list[bytes]:
    with EventLog(path) as log:
        for step in (10, 20, 30):
            log.append(Step(step=step, loss=2.0, t=100.0 + step))
            log.append(_samples(step, f"word{step}"))
        log.append(RolledBack(step=20, from_step=30, tokens=0, t=200.0))
    return [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]


def test_samples_fold_alike_one_by_one_and_in_bulk_and_a_rollback_cuts_them(
    tmp_path: Path,
) -> None:
    path = RunPaths(tmp_path).events
    lines = _log(path)
    one, bulk = RunState(), RunState()
    one.apply_all(read_all(path))
    fold_lines(bulk, lines)
    last = one.last_seq
    for state in (one, bulk):
        # the abandoned timeline's step 30 went with the rollback
        assert [(s.step, s.samples[0].text) for s in state.samples] == [
            (10, "word10"),
            (20, "word20"),
        ]
        state.apply(
            Samples(seq=last + 1, step=30, samples=[SampleText(prompt="T", text="again")])
        )  # the replayed step writes its own
        assert [s.samples[0].text for s in state.samples][-1] == "again"


def test_the_attach_index_keeps_the_samples(tmp_path: Path) -> None:
    path = RunPaths(tmp_path).events
    _log(path)
    state = RunState()
    state.apply_all(read_all(path))
    back = state_from_dict(state_to_dict(state))
    assert list(back.samples) == list(state.samples)
    assert back.samples_version == state.samples_version
    assert back.samples.maxlen == state.samples.maxlen


def test_samples_are_bounded() -> None:
    state = RunState(samples_cap=3)
    for step in range(1, 8):
        state.apply(_samples(step))
    assert [s.step for s in state.samples] == [5, 6, 7]


def test_the_view_follows_the_latest_until_stepped_back() -> None:
    history = [_samples(10), _samples(20), _samples(30)]
    view = SamplesView()
    assert view.index(history) == 2
    back = view.moved(history, -1)
    assert back == SamplesView(20) and back.index(history) == 1
    assert back.index([*history, _samples(40)]) == 1  # a new evaluation does not move it
    assert back.moved(history, -5) == SamplesView(10)
    assert back.moved(history, 1) == SamplesView()  # the latest again: follows
    assert view.first(history) == SamplesView(10)
    assert SamplesView().index([]) is None and SamplesView(5).index(history) == 0


def test_the_empty_state_says_how_to_turn_samples_on_or_when_they_come() -> None:
    assert empty_text({}) == HOW_TO_TURN_ON
    assert empty_text({"samples": {"every_evals": 0}}) == HOW_TO_TURN_ON
    on = {"samples": {"every_evals": 2}, "metrics": {"eval_every_steps": 50}}
    assert empty_text(on) == (
        "No samples yet: they come every 2 evaluation(s), the first at step 100."
    )
    assert empty_text({"samples": {"every_evals": 2}, "metrics": {"eval_every_steps": 0}}) == (
        HOW_TO_TURN_ON
    )


def test_the_event_log_says_samples_came_and_where_to_read_them() -> None:
    state = RunState()
    state.apply(_samples(10, " is dead"))
    (entry,) = [e for e in state.log if e.kind == "samples"]
    assert entry.step == 10 and entry.text == "samples, 1 prompt(s) (tab 7): The is dead"
    state.apply(Samples(seq=2, step=20, samples=[SampleText(prompt="x" * 100, text="y")]))
    assert len(state.log[-1].text) <= len("samples, 1 prompt(s) (tab 7)") + 72


def test_hostile_samples_lines_are_skipped() -> None:
    lines = [
        b'{"seq":1,"t":1,"type":"samples","step":1,"samples":[{"prompt":5}]}',
        b'{"seq":2,"t":1,"type":"samples","step":2,"samples":[{"text":"no prompt"}]}',
        b'{"seq":3,"t":1,"type":"samples","step":3,"samples":"x"}',
        b'{"seq":4,"t":1,"type":"samples","step":4,"samples":[{"prompt":"a","top_tokens":[[1]]}]}',
        b'{"seq":5,"t":1,"type":"samples","step":5,"kind":"masked",'
        b'"samples":[{"prompt":"The [MASK] [MASK]","top_tokens":[[]],"top_probs":[]}]}',
    ]
    state = RunState()
    folded, skipped = fold_lines(state, lines)
    assert [s.step for s in state.samples] == [5] and folded + skipped == len(lines)
