"""A tracked loop told to stop while paused, that ignores the stop and keeps stepping: the
cockpit and status.json said `paused` all along (the stop ends the pause without a resume
event). A step means the loop runs; the cockpit also says, once, that it kept stepping.

A real tiny GPT-2 loop under `growcockpit.track`, in a thread, steered through the real
control socket (RunClient), read back with the cockpit's own fold and status.json."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import torch
from run_fixtures import of_type, wait_events
from transformers import GPT2Config, GPT2LMHeadModel

import growcockpit
from growcockpit.protocol import read_all
from growcockpit.protocol.events import RunFinished, Step
from growcockpit.session.run_client import RunClient
from growcockpit.session.run_state import RunState

pytestmark = pytest.mark.slow


class DeafLoop(threading.Thread):
    """A user's loop that goes on after step() returned False, until the test lets it end."""

    def __init__(self, run: Path) -> None:
        super().__init__(daemon=True)
        torch.manual_seed(0)
        config = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2)
        self.model = GPT2LMHeadModel(config)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.cockpit = growcockpit.track(run, model=self.model, optimizer=self.opt)
        self.release = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.cockpit:
                while not self.release.is_set():
                    ids = torch.randint(0, 64, (2, 16))
                    loss = self.model(input_ids=ids, labels=ids).loss
                    loss.backward()
                    self.opt.step()
                    self.opt.zero_grad()
                    self.cockpit.step(loss=loss, tokens=ids.numel())  # its answer ignored
                    time.sleep(0.01)
        except BaseException as exc:  # surfaced by the test
            self.error = exc


def _fold(run: Path) -> RunState:
    state = RunState()
    for event in read_all(run / "events.jsonl"):
        state.apply(event)
    return state


def test_a_loop_that_ignores_stop_is_not_shown_paused(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "deaf"
    loop = DeafLoop(run)
    loop.start()
    try:
        wait_events(run, lambda evs: len(of_type(evs, Step)) >= 3, timeout=60)
        client = RunClient(run)
        assert client.send("pause").accepted
        assert _fold(run).display_status() == "paused"
        assert client.send("stop").accepted
        stopped_at = of_type(read_all(run / "events.jsonl"), Step)[-1].step
        wait_events(run, lambda evs: of_type(evs, Step)[-1].step >= stopped_at + 3, timeout=60)
        state = _fold(run)
        assert state.display_status() == "live", state.status
        said = [line.text for line in state.log if "still stepping after stop" in line.text]
        assert len(said) == 1, said
        deadline = time.monotonic() + 10  # status.json is written at most every few steps
        while json.loads((run / "status.json").read_text())["state"] == "paused":
            assert time.monotonic() < deadline, "status.json still says paused"
            time.sleep(0.1)
    finally:
        loop.release.set()
        loop.join(timeout=60)
    assert loop.error is None
    assert of_type(read_all(run / "events.jsonl"), RunFinished)[-1].status == "stopped"
