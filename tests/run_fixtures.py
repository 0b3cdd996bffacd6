"""Helpers for the reliability tests: tiny plans, in-process trainers, the CLI in a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from repo_paths import TINY_TOML

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.data.blocks import load_blocks
from growcockpit.backend.loop.engine import Trainer
from growcockpit.plan import loads_plan
from growcockpit.protocol import (
    ControlServer,
    EventLog,
    RunPaths,
    read_all,
)
from growcockpit.protocol.events import Event

TINY = TINY_TOML.read_text()


def tiny_plan(
    steps: tuple[int, int] = (20, 20), every_steps: int = 20, every_minutes: float = 10
) -> str:
    """tests/plans/tiny.toml with other stage lengths and checkpoint cadence, no sampler."""
    lengths = iter(steps)
    text = re.sub(r"^steps = 20$", lambda m: f"steps = {next(lengths)}", TINY, flags=re.M)
    text = text.replace("system_every_s = 0.5", "system_every_s = 0")
    return text.replace(
        "every_steps = 20\nkeep = 10",
        f"every_steps = {every_steps}\nevery_minutes = {every_minutes}\nkeep = 10",
    )


def make_trainer(run_dir: Path, text: str, control: ControlServer | None = None) -> Trainer:
    plan = loads_plan(text, "test.toml")
    paths = RunPaths(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    reporter = RunReporter(EventLog(paths.events).append, control)
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    torch.manual_seed(plan.seed)
    return Trainer(plan, run_dir, data, reporter, torch.device("cpu"))


def env(cache: Path) -> dict[str, str]:
    out = dict(os.environ)
    out.update(GROWCOCKPIT_CACHE=str(cache), HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    return out


def growcockpit(*args: str, cache: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "growcockpit", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env(cache),
    )


def wait_events(
    run_dir: Path, predicate: Callable[[list[Event]], object], timeout: float = 120
) -> list[Event]:
    deadline = time.time() + timeout
    events: list[Event] = []
    while time.time() < deadline:
        path = run_dir / "events.jsonl"
        events = read_all(path) if path.exists() else []
        if predicate(events):
            return events
        time.sleep(0.05)
    raise AssertionError(f"timed out; last events: {[e.type for e in events[-10:]]}")


def of_type(events: list[Event], cls: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, cls)]
