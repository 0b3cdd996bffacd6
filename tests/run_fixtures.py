"""Helpers for the reliability tests: tiny plans, in-process trainers, the CLI in a subprocess."""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
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


class _Zygote:
    """tests/warm_cli.py, started on first use and kept for the session."""

    def __init__(self) -> None:
        env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("warm_cli.py"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        atexit.register(self.close)
        self._read(600)

    def _read(self, timeout: float) -> dict[str, int] | None:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], max(timeout, 0))
        if not ready:
            return None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"warm_cli.py died (rc {self.proc.poll()})")
        return json.loads(line)  # type: ignore[no-any-return]

    def run(
        self, argv: list[str], env: dict[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str]:
        assert self.proc.stdin is not None
        with tempfile.TemporaryDirectory(prefix="warm-cli-") as tmp:
            out, err = Path(tmp, "out"), Path(tmp, "err")
            req = {"argv": argv, "env": env, "cwd": os.getcwd(), "out": str(out), "err": str(err)}
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            started = self._read(60)
            assert started is not None, "warm_cli.py did not fork"
            done = self._read(timeout)
            if done is None:  # as subprocess.run: kill it, then raise
                os.kill(started["pid"], signal.SIGKILL)
                self._read(60)
                raise subprocess.TimeoutExpired(argv, timeout, out.read_text(), err.read_text())
            return subprocess.CompletedProcess(
                argv, done["rc"], out.read_text(errors="replace"), err.read_text(errors="replace")
            )

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


_ZYGOTE: list[_Zygote] = []


def warm_growcockpit(
    *args: str, cache: Path, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """`growcockpit ARGS` as `growcockpit()` runs it, in a fork of an interpreter that has
    already imported the backend (tests/warm_cli.py), one intra-op thread. For the tests
    whose subject is what a command does, not how it starts (the cold start is tested by
    `growcockpit()` callers)."""
    if not _ZYGOTE:
        _ZYGOTE.append(_Zygote())
    run_env = env(cache)
    run_env["OMP_NUM_THREADS"] = "1"
    return _ZYGOTE[0].run(list(args), run_env, timeout)


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
